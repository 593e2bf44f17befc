import { toEpoch } from '@app/database';

import { RunDto } from './run.dto';
import { RunEntity } from './run.entity';

/**
 * A background run's state is its job's (the worker, the sweeper and an operator's requeue
 * change only the job); a synchronous run's is its own row.
 */
export function toRunDto(run: RunEntity): RunDto {
  const job = run.background ? run.job : null;
  const status = job?.status ?? run.status;
  const showsError = status === 'failed' || status === 'cancelled';
  return {
    run_id: run.id,
    session_id: run.sessionId,
    component_type: run.componentType,
    component_id: run.componentId,
    user_id: run.userId,
    status,
    message: run.message,
    content: status === 'completed' ? run.content : null,
    error: showsError ? ((job ? job.error : null) ?? run.error) : null,
    background: run.background,
    model: run.model,
    input_tokens: run.inputTokens,
    output_tokens: run.outputTokens,
    created_at: toEpoch(run.createdAt),
    updated_at: toEpoch(job && job.updatedAt > run.updatedAt ? job.updatedAt : run.updatedAt),
    completed_at: toEpoch(job ? job.completedAt : run.completedAt),
  };
}
