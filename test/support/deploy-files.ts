import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

import { DockerfileParser } from 'dockerfile-ast';
import { parse, parseAllDocuments } from 'yaml';

/** The roles the image runs and the package.json script each one must equal. */
export const ROLE_SCRIPTS = { api: 'start:api', worker: 'start:worker', migrate: 'migrate' } as const;
export type Role = keyof typeof ROLE_SCRIPTS;

export function packageScripts(): Record<string, string> {
  return (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
}

/** `role) exec <command> ;;` lines of docker/entrypoint.sh, as role → command. */
export function entrypointCommands(): Record<string, string> {
  const script = readFileSync('docker/entrypoint.sh', 'utf8');
  return Object.fromEntries([...script.matchAll(/^\s*([a-z]+)\)\s*exec (.+?)\s*;;\s*$/gm)].map(([, role, command]) => [role, command]));
}

export interface DockerInstruction {
  keyword: string;
  args: string[];
  flags: Record<string, string | null>;
  /** The exec-form (JSON array) arguments of CMD / ENTRYPOINT / RUN. */
  json: string[];
}

export interface DockerStage {
  name: string | null;
  instructions: DockerInstruction[];
}

/** docker/Dockerfile parsed by dockerfile-ast, split into build stages. */
export function dockerStages(text = readFileSync('docker/Dockerfile', 'utf8')): DockerStage[] {
  const stages: DockerStage[] = [];
  for (const instruction of DockerfileParser.parse(text).getInstructions()) {
    const args = instruction.getArguments().map((argument) => argument.getValue());
    const withFlags = instruction as unknown as { getFlags?: () => { getName(): string; getValue(): string | null }[] };
    const withJson = instruction as unknown as { getJSONStrings?: () => { getJSONValue(): string }[] };
    const parsed: DockerInstruction = {
      keyword: instruction.getKeyword(),
      args,
      flags: Object.fromEntries((withFlags.getFlags?.() ?? []).map((flag) => [flag.getName(), flag.getValue()])),
      json: (withJson.getJSONStrings?.() ?? []).map((value) => value.getJSONValue()),
    };
    if (parsed.keyword === 'FROM') {
      stages.push({ name: args[2] ?? null, instructions: [] });
    }
    stages.at(-1)?.instructions.push(parsed);
  }
  return stages;
}

/** A YAML file with Compose-style merge keys (`<<: *anchor`) resolved. */
export function readYaml<T = any>(path: string): T {
  return parse(readFileSync(path, 'utf8'), { merge: true }) as T;
}

export function readYamlDocuments(path: string): any[] {
  return parseAllDocuments(readFileSync(path, 'utf8'), { merge: true }).map((document) => document.toJS());
}

export function readEnvFile(path: string): Record<string, string> {
  return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
}

/** Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} (empty counts as unset, as with `:`). */
export function interpolate(value: string, variables: Record<string, string>): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g, (_match, name: string, operator?: string, operand = '') => {
    const set = variables[name];
    if (set) {
      return set;
    }
    if (operator === '?') {
      throw new Error(`${name}: ${operand}`);
    }
    return operator === '-' ? operand : '';
  });
}

export interface ComposeService {
  env_file?: string | string[];
  environment?: Record<string, string>;
}

/**
 * What a docker/compose.yaml app container's process.env would be, given docker/.env (`dotEnv`):
 * its env_file (only ever `.env`, that same file), then its `environment`, interpolated from it.
 */
export function composeContainerEnv(service: ComposeService, dotEnv: Record<string, string>): Record<string, string> {
  const envFiles = [service.env_file ?? []].flat();
  for (const file of envFiles) {
    if (file !== '.env') {
      throw new Error(`env_file ${file}: only docker/.env is modelled`);
    }
  }
  const environment = Object.entries(service.environment ?? {}).map(([name, value]) => [name, interpolate(String(value), dotEnv)]);
  return { ...(envFiles.length > 0 ? dotEnv : {}), ...Object.fromEntries(environment) };
}

/** The data of the ConfigMaps and Secrets a pod may refer to, by name. */
export interface KubernetesSources {
  configMaps: Record<string, Record<string, string>>;
  secrets: Record<string, Record<string, string>>;
}

function source(sources: KubernetesSources, kind: 'configMaps' | 'secrets', name: string): Record<string, string> {
  const data = sources[kind][name];
  if (!data) {
    throw new Error(`${kind} ${name}: not provided`);
  }
  return data;
}

/**
 * A Kubernetes container's environment as the kubelet builds it: every key of each envFrom
 * ConfigMap/Secret (with its prefix), then `env` (literal values, configMapKeyRef, secretKeyRef;
 * a missing optional key is left out), later entries winning.
 */
export function kubernetesContainerEnv(container: any, sources: KubernetesSources): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const reference = from.configMapRef ?? from.secretRef;
    const data = source(sources, from.configMapRef ? 'configMaps' : 'secrets', reference.name);
    for (const [key, value] of Object.entries(data)) {
      env[`${from.prefix ?? ''}${key}`] = value;
    }
  }
  for (const variable of container.env ?? []) {
    const keyRef = variable.valueFrom?.configMapKeyRef ?? variable.valueFrom?.secretKeyRef;
    if (!variable.valueFrom) {
      env[variable.name] = String(variable.value ?? '');
    } else if (keyRef) {
      const value = source(sources, variable.valueFrom.configMapKeyRef ? 'configMaps' : 'secrets', keyRef.name)[keyRef.key];
      if (value !== undefined) {
        env[variable.name] = value;
      } else if (!keyRef.optional) {
        throw new Error(`${variable.name}: key ${keyRef.key} missing from ${keyRef.name}`);
      }
    } else {
      throw new Error(`${variable.name}: valueFrom ${Object.keys(variable.valueFrom).join()} is not modelled`);
    }
  }
  return env;
}
