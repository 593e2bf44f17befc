export * from './memories.exception';
export * from './memories.module';
export * from './memories.service';
export * from './memory.dto';
export * from './memory.entity';
