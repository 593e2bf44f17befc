export * from './service-account.dto';
export * from './service-account.exception';
export * from './service-account-verifier';
export * from './service-accounts.module';
export * from './service-accounts.service';
export * from './token';
