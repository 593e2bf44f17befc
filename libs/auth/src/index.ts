export * from './auth.exception';
export * from './auth.module';
export * from './auth-mode';
export * from './authenticator.service';
export * from './current-principal.decorator';
export * from './route-scopes';
export * from './scope.guard';
export * from './scopes.decorator';
