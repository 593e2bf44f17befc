import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { loadEnv } from '@app/config';

import {
  composeContainerEnv,
  kubernetesContainerEnv,
  KubernetesSources,
  readEnvFile,
  readYaml,
  readYamlDocuments,
} from '../support/deploy-files';

/**
 * The worker claims jobs and fires schedules; it calls the api with its own short-lived schedule
 * credentials (keyed by INTERNAL_SERVICE_TOKEN or a secret in the database), never as root. So the
 * OS security key, an unscoped root credential, must not be in its environment: a compromised job
 * handler or a leaked worker environment must not hand out the whole service.
 */
const ROOT_KEY = 'OS_SECURITY_KEY';
/** Secrets only the api uses. */
const API_ONLY_SECRETS = [ROOT_KEY, 'JWT_SECRET'];

describe('docker/compose.yaml', () => {
  const { services } = readYaml('docker/compose.yaml');
  // docker/.env as an operator fills it in: every secret set, including the optional ones.
  const dotEnv = {
    ...readEnvFile('docker/example.env'),
    POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
    OS_SECURITY_KEY: randomBytes(32).toString('hex'),
    JWT_SECRET: randomBytes(32).toString('hex'),
    INTERNAL_SERVICE_TOKEN: randomBytes(32).toString('hex'),
  };

  it('the worker container does not receive OS_SECURITY_KEY even though docker/.env holds it', () => {
    const worker = composeContainerEnv(services.worker, dotEnv);
    expect(Object.keys(worker)).not.toContain(ROOT_KEY);
    expect(loadEnv(worker).OS_SECURITY_KEY).toBeUndefined();
  });

  it('the worker and the one-shot migration receive no api-only secret, only what they use', () => {
    for (const role of ['worker', 'migrate']) {
      const env = composeContainerEnv(services[role], dotEnv);
      for (const secret of API_ONLY_SECRETS) {
        expect(Object.keys(env), `${role} ${secret}`).not.toContain(secret);
      }
      expect(loadEnv(env).databaseUrl, role).toBe(`postgresql://platform:${dotEnv.POSTGRES_PASSWORD}@db:5432/platform`);
    }
    // The worker keys its schedule credentials like the api, and still takes its tuning from docker/.env.
    const worker = loadEnv(composeContainerEnv(services.worker, { ...dotEnv, WORKER_CONCURRENCY: '3' }));
    expect(worker.INTERNAL_SERVICE_TOKEN).toBe(dotEnv.INTERNAL_SERVICE_TOKEN);
    expect(worker.WORKER_CONCURRENCY).toBe(3);
  });

  it('the api still gets OS_SECURITY_KEY and every other docker/.env variable', () => {
    const api = composeContainerEnv(services.api, dotEnv);
    expect(api.OS_SECURITY_KEY).toBe(dotEnv.OS_SECURITY_KEY);
    expect(api.JWT_SECRET).toBe(dotEnv.JWT_SECRET);
    expect(api.INTERNAL_SERVICE_TOKEN).toBe(dotEnv.INTERNAL_SERVICE_TOKEN);
  });
});

describe('deploy/kubernetes', () => {
  const directory = 'deploy/kubernetes';
  const objects: any[] = readYaml(`${directory}/kustomization.yaml`).resources.flatMap((file: string) =>
    readYamlDocuments(`${directory}/${file}`),
  );
  const find = (kind: string, name: string) => objects.find((object) => object.kind === kind && object.metadata.name === name);
  const container = (kind: string, name: string) => find(kind, name).spec.template.spec.containers[0];
  // platform-secrets as the README has the operator create it, with the optional secrets as well.
  const sources: KubernetesSources = {
    configMaps: { 'platform-config': find('ConfigMap', 'platform-config').data },
    secrets: {
      'platform-secrets': {
        DATABASE_URL: 'postgresql://platform:secret@postgres:5432/platform',
        OS_SECURITY_KEY: 'k'.repeat(64),
        JWT_SECRET: 'j'.repeat(64),
        INTERNAL_SERVICE_TOKEN: 'i'.repeat(64),
      },
    },
  };

  it('the worker pod does not receive OS_SECURITY_KEY from platform-secrets (no envFrom of the Secret, no key reference)', () => {
    const worker = kubernetesContainerEnv(container('Deployment', 'platform-worker'), sources);
    expect(Object.keys(worker)).not.toContain(ROOT_KEY);
    expect(loadEnv(worker).OS_SECURITY_KEY).toBeUndefined();
  });

  it('the worker and the migrate Job receive no api-only secret, only what they use', () => {
    for (const [kind, name] of [
      ['Deployment', 'platform-worker'],
      ['Job', 'platform-migrate'],
    ]) {
      const env = kubernetesContainerEnv(container(kind, name), sources);
      for (const secret of API_ONLY_SECRETS) {
        expect(Object.keys(env), `${name} ${secret}`).not.toContain(secret);
      }
      expect(loadEnv(env).databaseUrl, name).toBe(sources.secrets['platform-secrets'].DATABASE_URL);
    }
    const worker = kubernetesContainerEnv(container('Deployment', 'platform-worker'), sources);
    expect(worker.INTERNAL_SERVICE_TOKEN).toBe(sources.secrets['platform-secrets'].INTERNAL_SERVICE_TOKEN);
    // INTERNAL_SERVICE_TOKEN is optional: a Secret without it still starts the worker.
    const { INTERNAL_SERVICE_TOKEN: _optional, ...required } = sources.secrets['platform-secrets'];
    expect(() =>
      kubernetesContainerEnv(container('Deployment', 'platform-worker'), { ...sources, secrets: { 'platform-secrets': required } }),
    ).not.toThrow();
  });

  it('no secret hides in the shared ConfigMap', () => {
    for (const secret of [...API_ONLY_SECRETS, 'DATABASE_URL', 'INTERNAL_SERVICE_TOKEN']) {
      expect(Object.keys(sources.configMaps['platform-config'])).not.toContain(secret);
    }
  });

  it('the api still gets OS_SECURITY_KEY and the rest of platform-secrets', () => {
    const api = kubernetesContainerEnv(container('Deployment', 'platform-api'), sources);
    expect(api).toMatchObject(sources.secrets['platform-secrets']);
  });

  it("an operator following the README's kubectl create secret hands OS_SECURITY_KEY to the api only", () => {
    const readme = readFileSync('README.md', 'utf8');
    const command = /kubectl create secret generic platform-secrets[^`]*/.exec(readme)?.[0] ?? '';
    const keys = [...command.matchAll(/--from-literal=([A-Z_]+)=/g)].map(([, key]) => key);
    expect(keys).toContain(ROOT_KEY);
    const fromReadme = {
      ...sources,
      secrets: { 'platform-secrets': Object.fromEntries(keys.map((key) => [key, sources.secrets['platform-secrets'][key]])) },
    };
    // Every key a pod requires is in that Secret (a missing one would keep the pod from starting) ...
    const environments = Object.fromEntries(
      [
        ['Deployment', 'platform-api'],
        ['Deployment', 'platform-worker'],
        ['Job', 'platform-migrate'],
      ].map(([kind, name]) => [name, kubernetesContainerEnv(container(kind, name), fromReadme)]),
    );
    // ... and only the api gets the root key.
    expect(environments['platform-api'].OS_SECURITY_KEY).toBe(sources.secrets['platform-secrets'].OS_SECURITY_KEY);
    expect(Object.keys(environments['platform-worker'])).not.toContain(ROOT_KEY);
    expect(Object.keys(environments['platform-migrate'])).not.toContain(ROOT_KEY);
  });
});
