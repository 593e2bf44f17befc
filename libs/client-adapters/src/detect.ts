import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Whether an executable of that name is on PATH. */
export function onPath(command: string, env: NodeJS.ProcessEnv): boolean {
  return (env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return dir !== '';
    } catch {
      return false;
    }
  });
}
