// The floor for the background POST: a minimal Fastify + pg server doing what the service's
// `POST /agents/{id}/runs` with background=true must do (bench/reference-run.mjs), and nothing else. Started by
// bench/background-post.mjs; prints its URL.
import Fastify from 'fastify';

import { endPool, principal, storeBackgroundRun } from './reference-run.mjs';

const app = Fastify();
app.post('/agents/:agentId/runs', async (request, reply) => {
  const user = await principal(request.headers.authorization);
  if (!user) {
    return reply.code(401).send({ detail: 'Unauthorized' });
  }
  const { message } = request.body ?? {};
  if (typeof message !== 'string' || message.length === 0) {
    return reply.code(422).send({ detail: 'message is required' });
  }
  return reply.code(202).send(await storeBackgroundRun(request.params.agentId, user, message));
});

const address = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(JSON.stringify({ url: address }));
process.on('SIGTERM', () => void app.close().then(endPool));
