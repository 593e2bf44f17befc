export * from './chat-apps';
export * from './client-adapter';
export * from './clients';
export * from './config-file';
export { AUTH_HEADER_ENV, desktopConfigPath, npxNote } from './desktop-app-a';
