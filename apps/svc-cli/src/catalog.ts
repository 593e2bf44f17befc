/** What bare `svc` prints: the command catalog. */
export const CATALOG = `svc - operator CLI for the platform service

Usage: svc <command> [options]

Commands:
  create [name]           Scaffold a project from a deployment template
  connect                 Connect coding tools to the service over MCP
  disconnect              Remove MCP entries from client configs
  status                  Show the service and which clients are configured
  up                      Start the compose deployment
  down                    Stop the compose deployment
  restart                 Restart the compose deployment
  tokens create <name>    Mint a service-account token
  tokens list             List service accounts
  tokens revoke <name>    Revoke a service account
  tokens rotate <name>    A new token; the old one works for --grace
  jobs list               List queue jobs (--status, --component, --limit)
  jobs get <id>           Show one queue job
  jobs stats              Job counts by status
  jobs requeue <id>...    Requeue failed jobs: by id, or by --status failed
  jobs cancel <id>...     Cancel queued jobs: by id, or by --status queued
  schedules list          List schedules
  schedules get <id>      Show one schedule (<id>: its id or name)
  schedules runs <id>     A schedule's fire history
  schedules trigger <id>  Fire a schedule now
  schedules pause <id>    Pause a schedule (--reason)
  schedules resume <id>   Resume a paused schedule

Options:
  --version               Print the CLI version
  --help                  Help for a command (svc <command> --help)

Every command accepts --json for one machine-readable JSON document on stdout.

Service URL: --url, else SERVICE_URL (the environment, else ./.env.production,
else ./.env as npm start writes it), else the first to answer of localhost
ports 7777, 7778, 7779, 8000.
Credential (tokens, jobs, schedules, connect): SVC_ADMIN_TOKEN, else
OS_SECURITY_KEY, else a prompt on a terminal. In a checkout started with
npm start: OS_SECURITY_KEY=$(cat .data/os-security-key) npx svc ...`;
