export * from './chat-apps';
export * from './client-adapter';
export * from './clients';
export { npxNote } from './desktop-app-a';
