import { CreateServiceAccounts1763800000000 } from './1763800000000-CreateServiceAccounts';
import { CreateRunsAndQueue1764000000001 } from './1764000000001-CreateRunsAndQueue';

/** Every migration, in order. Listed explicitly so the build needs no file globbing. */
export const MIGRATIONS = [CreateServiceAccounts1763800000000, CreateRunsAndQueue1764000000001];
