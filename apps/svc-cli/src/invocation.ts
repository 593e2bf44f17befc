/**
 * How to type svc in a command this run prints as a next step: as the user started it. In a checkout svc is
 * `npx svc` (npm marks what npx runs); a bare `svc` there is "command not found".
 */
export function svcInvocation(env: NodeJS.ProcessEnv = process.env): string {
  return env.npm_lifecycle_event === 'npx' ? 'npx svc' : 'svc';
}
