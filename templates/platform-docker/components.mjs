// Your own agents, teams and workflows. The platform loads this file when the api and the worker
// start, if the environment variable COMPONENTS_MODULE names it (see README.md).
//
// The default export is an array of components, or a function that receives the platform's helpers
// ({ modelAgent, defineComponent }) and returns one (it may be async). A component is
//   { kind: 'agent' | 'team' | 'workflow', id, name, description?, run(ctx) }
// It is run with POST /<kind>s/<id>/runs (POST /agents/hello-agent/runs). run(ctx) resolves to the
// run's content (a string), or throws to fail the run. ctx has:
//   runId, sessionId, userId, message  this run, its session, its caller and what it was asked
//   history                            the session's earlier turns (a message and its answer each), as
//                                      messages: [{ role: 'user' | 'assistant', content }], oldest first
//   signal                             an AbortSignal, aborted when the run is cancelled: pass it to fetch()
//   checkpoint()                       async; throws once the run is cancelled: await it between steps
//   emit(delta)                        streams a piece of content to a caller that asked for stream=true
//   memories                           facts kept about this run's user: await ctx.memories.list(), .add(text, topics?)
//   span(name, attributes?)            a step of your own in the run's trace: const s = ctx.span('lookup'); ...; s.end()
//   recordUsage({ model, inputTokens, outputTokens })   a model call's token counts, shown on the run
// This file is plain JavaScript, mounted read-only into the platform's containers (compose.yaml): it
// needs no build step, and it can import Node's built-in modules (node:...), nothing from npm.

/** Greets the caller by the name in the message, and says how far the session has come. */
const helloAgent = {
  kind: 'agent',
  id: 'hello-agent',
  name: 'Hello agent',
  description: 'Greets you and counts the earlier turns of this session',
  async run(ctx) {
    const who = ctx.message.trim() || 'there';
    const greeting = `Hello, ${who}!`;
    ctx.emit(greeting);
    // A cancelled run stops here instead of doing the rest of the work.
    await ctx.checkpoint();
    // A turn is a message and its answer: count the caller's messages.
    const turns = ctx.history.filter((entry) => entry.role === 'user').length;
    const rest =
      turns === 0 ? ' This is the start of the session.' : ` This session has ${turns} earlier ${turns === 1 ? 'turn' : 'turns'}.`;
    ctx.emit(rest);
    return greeting + rest;
  },
};

export default ({ modelAgent }) => [
  helloAgent,

  // An agent backed by a model, through any OpenAI-compatible chat-completions API. It sends its
  // instructions, the session's latest turns (historyTurns, default 10) and the message, and
  // streams the answer. Uncomment one, then svc restart.
  //
  // Ollama on the Docker host (ollama pull llama3.2; no key needed; compose.yaml maps
  // host.docker.internal to the host, and Ollama must listen beyond loopback: OLLAMA_HOST=0.0.0.0):
  // modelAgent({
  //   id: 'assistant',
  //   name: 'Assistant',
  //   instructions: 'You are a concise, friendly assistant.',
  //   model: 'llama3.2',
  //   baseURL: 'http://host.docker.internal:11434/v1',
  // }),
  //
  // OpenAI: set OPENAI_API_KEY in .env (compose.yaml passes it to the api and the worker).
  // apiKeyEnv names that variable; the key itself never goes in this file.
  // modelAgent({
  //   id: 'openai-assistant',
  //   instructions: 'You are a concise, friendly assistant.',
  //   model: 'gpt-4o-mini',
  //   baseURL: 'https://api.openai.com/v1',
  //   apiKeyEnv: 'OPENAI_API_KEY',
  //   maxOutputTokens: 800,
  //   temperature: 0.3,
  // }),
];
