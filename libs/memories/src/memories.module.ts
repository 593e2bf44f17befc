import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';

import { MemoriesService } from './memories.service';
import { MemoryEntity } from './memory.entity';
import { MemoryRepository } from './memory.repository';

@Module({
  imports: [TypeOrmModule.forFeature([MemoryEntity])],
  providers: [MemoryRepository, MemoriesService],
  exports: [MemoriesService],
})
export class MemoriesModule {}
