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
