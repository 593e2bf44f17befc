import { CreateServiceAccounts1763800000000 } from './1763800000000-CreateServiceAccounts';

/** Every migration, in order. Listed explicitly so the build needs no file globbing. */
export const MIGRATIONS = [CreateServiceAccounts1763800000000];
