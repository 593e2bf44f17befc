import { Injectable, Type } from '@nestjs/common';
import { z } from 'zod';

import { Principal } from '@app/access';
import { McpTool, McpToolCall, McpToolFailure, McpToolset } from '@app/mcp';
import { AcceptedRunDto, ComponentDto, ComponentKind, RunDto, RunRequest, RunsService, StartRunDto } from '@app/runs';

import { dtoArguments, McpArguments } from '../mcp-arguments';

/** While a run says nothing, a progress notification this often: a client that restarts its timeout on progress keeps waiting. */
const PROGRESS_HEARTBEAT_MS = 5000;

interface ComponentTools {
  kind: ComponentKind;
  /** URL segment and scope resource: agents, teams, workflows. */
  resource: string;
  /** Path parameter (and tool argument) naming the component: agent_id, team_id, workflow_id. */
  param: string;
}

/**
 * The tools of one component kind, mirroring its REST routes one to one (like the run controllers,
 * one definition instantiated per kind): list_agents, run_agent, get_agent_run, cancel_agent_run, ...
 */
function componentTools({ kind, resource, param }: ComponentTools): Type<unknown> {
  const componentId = z
    .string()
    .describe(`Id of the ${kind}: list_${resource} lists them all, get_config (with config:read) those this token may run`);
  const runRef = z.object({ [param]: componentId, run_id: z.string().describe('Run id (UUID)') });

  @McpToolset()
  @Injectable()
  class ComponentRunTools {
    constructor(
      readonly runs: RunsService,
      readonly args: McpArguments,
    ) {}

    @McpTool({
      name: `list_${resource}`,
      mirrors: `GET /${resource}`,
      description: `List the ${resource} this service runs: every one with ${resource}:read, those granted with ${resource}:<id>:read (get_config, with config:read, lists those this token may run).`,
      annotations: { readOnlyHint: true },
    })
    list(principal: Principal): { data: ComponentDto[] } {
      return { data: this.runs.componentsFor(principal, kind, `${resource}:read`) };
    }

    @McpTool({
      name: `run_${kind}`,
      mirrors: `POST /${resource}/:${param}/runs`,
      description:
        `Run the ${kind} with a message. Waits for the finished run (status, content, error) by default; ` +
        `with background=true it queues a durable job and returns {run_id, session_id, status: "queued"} at once (poll get_${kind}_run). ` +
        'A client that asks for progress gets the run id at the start, the content as it comes, and a notification every 5 s while the run is quiet. ' +
        'A run that ends failed or cancelled is answered as a tool error carrying the run (its error says why). ' +
        'Cancelling the call (or closing its request) cancels the run; for a run longer than your client waits, use background=true.',
      // A tool answers once, so the route's `stream` has no meaning here.
      input: z.object({ [param]: componentId, ...dtoArguments(StartRunDto, ['stream']) }),
    })
    async run(principal: Principal, args: Record<string, unknown>, call: McpToolCall): Promise<RunDto | AcceptedRunDto | McpToolFailure> {
      const { [param]: id, ...body } = args;
      const request = await this.args.as(StartRunDto, body, 'body');
      if (request.background) {
        return this.runs.enqueue(principal, kind, String(id), request);
      }
      const finished = await this.runFollowing(principal, String(id), request, call);
      return finished.status === 'completed' ? finished : new McpToolFailure(finished);
    }

    /**
     * The run as the route's stream=true makes it, told as progress (a no-op unless the client asked): a long run
     * outlives many clients' request timeout, and without a word from it the client gives up holding no run id.
     * Followed through its events whether or not anyone listens, so that a call the client cancels (or gives up
     * on, closing the request) cancels its run, which would otherwise run on for nobody.
     */
    private async runFollowing(principal: Principal, id: string, request: RunRequest, call: McpToolCall): Promise<RunDto> {
      let runId: string | null = null;
      let finished: RunDto | null = null;
      const cancelRun = (): void => {
        if (runId && !finished) {
          this.runs.cancel(principal, kind, id, runId).catch(() => undefined);
        }
      };
      call.signal.addEventListener('abort', cancelRun, { once: true });
      const heartbeat = setInterval(() => call.progress(runId ? `Run ${runId} is running` : 'Starting the run'), PROGRESS_HEARTBEAT_MS);
      try {
        await this.runs.stream(principal, kind, id, request, ({ event, data }) => {
          if (event === 'RunStarted') {
            runId = String(data.run_id);
            call.progress(`Run ${runId} started (session ${String(data.session_id)})`);
            if (call.signal.aborted) {
              cancelRun();
            }
          } else if (event === 'RunContent') {
            call.progress(String(data.content));
          } else {
            finished = data as unknown as RunDto;
          }
        });
      } finally {
        clearInterval(heartbeat);
        call.signal.removeEventListener('abort', cancelRun);
      }
      return finished!;
    }

    @McpTool({
      name: `get_${kind}_run`,
      mirrors: `GET /${resource}/:${param}/runs/:run_id`,
      description: `One run of the ${kind}: status, content, error, timestamps.`,
      input: runRef,
      annotations: { readOnlyHint: true },
    })
    get(principal: Principal, args: Record<string, unknown>): Promise<RunDto> {
      return this.runs.get(principal, kind, String(args[param]), String(args.run_id));
    }

    @McpTool({
      name: `cancel_${kind}_run`,
      mirrors: `POST /${resource}/:${param}/runs/:run_id/cancel`,
      description: 'Cancel a run: a queued run is cancelled at once, a running one at its next checkpoint. Returns the run.',
      input: runRef,
      annotations: { destructiveHint: true, idempotentHint: true },
    })
    cancel(principal: Principal, args: Record<string, unknown>): Promise<RunDto> {
      return this.runs.cancel(principal, kind, String(args[param]), String(args.run_id));
    }
  }
  Object.defineProperty(ComponentRunTools, 'name', { value: `${kind[0].toUpperCase()}${kind.slice(1)}RunTools` });
  return ComponentRunTools;
}

export const AgentRunTools = componentTools({ kind: 'agent', resource: 'agents', param: 'agent_id' });
export const TeamRunTools = componentTools({ kind: 'team', resource: 'teams', param: 'team_id' });
export const WorkflowRunTools = componentTools({ kind: 'workflow', resource: 'workflows', param: 'workflow_id' });
