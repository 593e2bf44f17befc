/**
 * What a deployment's components module is written against. Nothing here imports the platform's
 * runtime, so a TypeScript module can `import type` this file from a platform checkout.
 */
import type { Component } from './component';

export type { Component, ComponentKind, Memory, ModelUsage, RunContext, RunMemories, RunSpan, Turn } from './component';

/** An agent backed by an OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp server). */
export interface ModelAgentOptions {
  id: string;
  name?: string;
  description?: string;
  /** The system prompt. */
  instructions: string;
  /** The provider's model name, e.g. `gpt-4o-mini` or `llama3.2`. */
  model: string;
  /** The API's base URL, up to `/v1` (e.g. `http://127.0.0.1:11434/v1` for Ollama). */
  baseURL: string;
  /** Name of the environment variable holding the API key; a key never sits in code. None: no key is sent. */
  apiKeyEnv?: string;
  maxOutputTokens?: number;
  temperature?: number;
  /** How many of the session's latest turns (a message and its answer each) go before the message (default 10). */
  historyTurns?: number;
  /** One model call may take this long before the run fails (default 300). */
  timeoutSeconds?: number;
}

/** What a components module's function receives: the platform's helpers, so the module needs no import path to the platform. */
export interface ComponentHelpers {
  /** An agent backed by an OpenAI-compatible chat-completions endpoint. */
  modelAgent(options: ModelAgentOptions): Component;
  /** Types a component (and checks its shape in an editor); returns it unchanged. */
  defineComponent<T extends Component>(component: T): T;
}

/** The default export (or `components` export) of a COMPONENTS_MODULE file. */
export type ComponentsModule = readonly Component[] | ((helpers: ComponentHelpers) => readonly Component[] | Promise<readonly Component[]>);
