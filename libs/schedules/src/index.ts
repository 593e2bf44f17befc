export * from './cron';
export * from './schedule.dto';
export * from './schedule.exception';
export * from './schedule-credentials';
export * from './schedule-credentials.module';
export * from './schedule-target';
export * from './schedules.module';
export * from './schedules.service';
