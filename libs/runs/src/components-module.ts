import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { BootError, Env } from '@app/config';

import type { ComponentHelpers } from './authoring';
import { Component, COMPONENT_KINDS } from './component';
import { DEMO_COMPONENTS } from './demo-components';
import { modelAgent } from './model-agent';

function defineComponent<T extends Component>(component: T): T {
  return component;
}

const HELPERS: ComponentHelpers = { modelAgent, defineComponent };
/** Ids appear in paths and scopes (`agents:<id>:run`): the scope language's id rule. */
const COMPONENT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export class ComponentsModuleError extends BootError {
  constructor(file: string, problem: string) {
    super(`COMPONENTS_MODULE ${file}: ${problem}`);
  }
}

/** The deployment's components (COMPONENTS_MODULE), checked against each other and the demo set; none when unset. */
export async function deploymentComponents(env: Env): Promise<Component[]> {
  if (!env.COMPONENTS_MODULE) {
    return [];
  }
  return loadComponentsModule(env.COMPONENTS_MODULE, env.DEMO_COMPONENTS ? DEMO_COMPONENTS : []);
}

/**
 * Loads an ES module or CommonJS file whose default export (or `components` export) is an array of
 * components or a function of the helpers returning one. Any problem is one BootError naming the file.
 */
export async function loadComponentsModule(path: string, registered: readonly Component[] = []): Promise<Component[]> {
  const file = resolve(path);
  if (!existsSync(file) || !statSync(file).isFile()) {
    throw new ComponentsModuleError(file, 'no such file');
  }
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ComponentsModuleError(file, `cannot be loaded: ${firstLine(error, file)}`);
  }
  let exported = loaded.components ?? loaded.default;
  // CommonJS `exports.components = ...` and TypeScript's compiled `exports.default = ...` arrive one level down.
  if (isObject(exported) && !Array.isArray(exported) && ('components' in exported || 'default' in exported)) {
    exported = exported.components ?? exported.default;
  }
  let components: unknown = exported;
  if (typeof exported === 'function') {
    try {
      components = await (exported as (helpers: ComponentHelpers) => unknown)(HELPERS);
    } catch (error) {
      throw new ComponentsModuleError(file, `its function threw: ${firstLine(error, file)}`);
    }
  }
  if (!Array.isArray(components)) {
    throw new ComponentsModuleError(file, 'must export (as default or `components`) an array of components, or a function returning one');
  }
  return check(file, components, registered);
}

function check(file: string, components: unknown[], registered: readonly Component[]): Component[] {
  const seen = new Set(registered.map((component) => `${component.kind}/${component.id}`));
  return components.map((candidate, index) => {
    const where = `component #${index + 1}`;
    if (!isObject(candidate)) {
      throw new ComponentsModuleError(file, `${where} is not an object`);
    }
    const { kind, id, name, description, bootWarning, run } = candidate;
    if (!COMPONENT_KINDS.includes(kind as never)) {
      throw new ComponentsModuleError(file, `${where}: kind must be one of ${COMPONENT_KINDS.join(', ')} (got ${JSON.stringify(kind)})`);
    }
    if (typeof id !== 'string' || !COMPONENT_ID.test(id)) {
      throw new ComponentsModuleError(
        file,
        `${where}: id must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(id)})`,
      );
    }
    if (typeof run !== 'function') {
      throw new ComponentsModuleError(file, `${kind} '${id}' has no run function`);
    }
    if ((name !== undefined && typeof name !== 'string') || (description !== undefined && typeof description !== 'string')) {
      throw new ComponentsModuleError(file, `${kind} '${id}': name and description must be strings`);
    }
    const key = `${kind}/${id}`;
    if (seen.has(key)) {
      throw new ComponentsModuleError(file, `duplicate id: ${kind} '${id}' is defined twice (or is a demo component's id)`);
    }
    seen.add(key);
    const warning = typeof bootWarning === 'string' ? { bootWarning } : {};
    return { kind, id, name: name ?? id, description, ...warning, run: run.bind(candidate) } as Component;
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/**
 * The error's first line, and the line of the module it came from when its stack names one. A syntax error's
 * stack does not (Node keeps the place apart), so it says how to find it.
 */
function firstLine(error: unknown, file: string): string {
  const line = (error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error)).split(
    '\n',
  )[0];
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  for (const place of [`${pathToFileURL(file).href}:`, `${file}:`]) {
    const at = stack.indexOf(place);
    const lineNumber = at < 0 ? null : /^\d+/.exec(stack.slice(at + place.length));
    if (lineNumber) {
      return `${line} (line ${lineNumber[0]})`;
    }
  }
  return error instanceof SyntaxError ? `${line} (node --check ${file} shows where)` : line;
}
