import { Module } from '@nestjs/common';

/** The svc CLI's commands; each lives in commands/<name>.command.ts. */
@Module({ providers: [] })
export class CliModule {}
