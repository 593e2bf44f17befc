import { readdirSync } from 'node:fs';

import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';

import { loadEnv } from '@app/config';
import { DATABASE_PING_TIMEOUT_MS } from '@app/health';

import { dockerStages, kubernetesContainerEnv, readYaml, readYamlDocuments } from '../support/deploy-files';

const DIRECTORY = 'deploy/kubernetes';

/** kubernetes-models: each kind's model, validating against the Kubernetes OpenAPI schema. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
};

const kustomization = readYaml(`${DIRECTORY}/kustomization.yaml`);
const objects: any[] = kustomization.resources.flatMap((file: string) => readYamlDocuments(`${DIRECTORY}/${file}`));
const find = (kind: string, name: string) => objects.find((object) => object.kind === kind && object.metadata.name === name);
const api = find('Deployment', 'platform-api');
const worker = find('Deployment', 'platform-worker');
const migrate = find('Job', 'platform-migrate');
const config = find('ConfigMap', 'platform-config');
const containerOf = (workload: any) => workload.spec.template.spec.containers[0];
const envOf = (workload: any) =>
  Object.fromEntries((containerOf(workload).env ?? []).map((variable: any) => [variable.name, variable.value]));
/** Stands in for the platform-secrets Secret the operator creates (README "Deploy"). */
const secrets = { DATABASE_URL: 'postgresql://platform:secret@postgres:5432/platform', OS_SECURITY_KEY: 'k'.repeat(32) };
/** The environment the kubelet gives a workload's container, with `secrets` as platform-secrets. */
const podEnv = (workload: any) =>
  kubernetesContainerEnv(containerOf(workload), {
    configMaps: { 'platform-config': config.data },
    secrets: { 'platform-secrets': secrets },
  });

describe('deploy/kubernetes', () => {
  it('lists every manifest of the directory in kustomization.yaml, and nothing else', () => {
    expect(kustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
    const manifests = readdirSync(DIRECTORY).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(manifests.sort());
    expect(kustomization.images).toEqual([{ name: 'platform-service', newTag: 'local' }]);
  });

  it('validates every object with kubernetes-models against the Kubernetes schema', () => {
    expect(objects.map((object) => `${object.kind}/${object.metadata.name}`).sort()).toEqual([
      'ConfigMap/platform-config',
      'Deployment/platform-api',
      'Deployment/platform-worker',
      'Job/platform-migrate',
      'PodDisruptionBudget/platform-api',
      'PodDisruptionBudget/platform-worker',
      'Service/platform-api',
    ]);
    for (const object of objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}`];
      expect(Model, `${object.apiVersion} ${object.kind}`).toBeDefined();
      expect(() => new Model(object).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
    // The validator is live: a Deployment without its selector is refused.
    const { selector: _selector, ...specWithoutSelector } = api.spec;
    expect(() => new Deployment({ ...api, spec: specWithoutSelector }).validate()).toThrow(/selector/);
  });

  it('runs api, worker and migrate from the one image, each role selected by its argument', () => {
    for (const [workload, role] of [
      [api, 'api'],
      [worker, 'worker'],
      [migrate, 'migrate'],
    ]) {
      expect(containerOf(workload)).toMatchObject({ image: 'platform-service', args: [role] });
    }
    expect(migrate.spec.template.spec.restartPolicy).toBe('Never');
  });

  it('leaves migrations to the Job: the shared config sets DB_MIGRATE=false for every pod', () => {
    expect(config.data.DB_MIGRATE).toBe('false');
    for (const workload of [api, worker, migrate]) {
      expect(containerOf(workload).envFrom[0], workload.metadata.name).toEqual({ configMapRef: { name: 'platform-config' } });
      expect(podEnv(workload).DB_MIGRATE, workload.metadata.name).toBe('false');
    }
  });

  it('gives the api all of platform-secrets; worker and Job only DATABASE_URL from it (see test/security/deploy-secrets.spec.ts)', () => {
    expect(containerOf(api).envFrom).toEqual([{ configMapRef: { name: 'platform-config' } }, { secretRef: { name: 'platform-secrets' } }]);
    for (const workload of [worker, migrate]) {
      expect(containerOf(workload).envFrom, workload.metadata.name).toEqual([{ configMapRef: { name: 'platform-config' } }]);
      expect(podEnv(workload).DATABASE_URL, workload.metadata.name).toBe(secrets.DATABASE_URL);
    }
  });

  it('gives each container an environment the service accepts (secrets stand in for platform-secrets)', () => {
    for (const workload of [api, worker, migrate]) {
      expect(loadEnv(podEnv(workload)).databaseUrl, workload.metadata.name).toBe(secrets.DATABASE_URL);
    }
    const apiEnv = loadEnv(podEnv(api));
    expect(apiEnv).toMatchObject({ HOST: '0.0.0.0', PORT: 7777, MCP_ENABLED: true, DB_MIGRATE: false });
    // The api advertises its external address (Origin checks, OAuth audience), never its bind address.
    expect(apiEnv.publicUrl).toMatch(/^https:\/\//);
    expect(apiEnv.publicUrl).not.toContain('0.0.0.0');
    // The worker calls the api through the in-cluster Service.
    expect(loadEnv(podEnv(worker)).publicUrl).toBe('http://platform-api:7777');
  });

  it('probes the api: ready on /readyz (database), alive on /health, on its named port', () => {
    const container = containerOf(api);
    expect(container.ports).toEqual([
      { name: 'http', containerPort: Number(envOf(api).PORT) },
      { name: 'metrics', containerPort: Number(envOf(api).API_METRICS_PORT) },
    ]);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/health', port: 'http' });
  });

  it('probes the worker on WORKER_HEALTH_PORT: ready on /readyz, alive on /livez', () => {
    const container = containerOf(worker);
    expect(container.ports).toEqual([{ name: 'health', containerPort: Number(envOf(worker).WORKER_HEALTH_PORT) }]);
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'health' });
    // Probes bind on the pod IP, which the kubelet calls.
    expect(envOf(worker).HOST).toBe('0.0.0.0');
  });

  it('gives a booting pod minutes to reach its database before liveness may restart it', () => {
    for (const workload of [api, worker]) {
      const container = containerOf(workload);
      expect(container.startupProbe.httpGet).toEqual(container.livenessProbe.httpGet);
      expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(300);
      expect(container.livenessProbe.initialDelaySeconds ?? 0).toBe(0);
    }
  });

  it('does not start an api without OS_SECURITY_KEY: a key missing from platform-secrets would leave it without authentication', () => {
    const { OS_SECURITY_KEY: _key, ...withoutKey } = secrets;
    expect(() =>
      kubernetesContainerEnv(containerOf(api), {
        configMaps: { 'platform-config': config.data },
        secrets: { 'platform-secrets': withoutKey },
      }),
    ).toThrow('OS_SECURITY_KEY: key OS_SECURITY_KEY missing from platform-secrets');
  });

  it('spreads the replicas of api and worker over nodes', () => {
    for (const workload of [api, worker]) {
      const [spread] = workload.spec.template.spec.topologySpreadConstraints;
      expect(spread).toMatchObject({
        topologyKey: 'kubernetes.io/hostname',
        labelSelector: { matchLabels: workload.spec.selector.matchLabels },
      });
    }
  });

  it('allows each probe longer than the database check takes to give up', () => {
    for (const workload of [api, worker]) {
      const container = containerOf(workload);
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
        expect(probe.timeoutSeconds * 1000).toBeGreaterThan(DATABASE_PING_TIMEOUT_MS);
      }
    }
  });

  it('lets the worker drain before SIGKILL: the grace period exceeds WORKER_SHUTDOWN_TIMEOUT_SECONDS', () => {
    const drainSeconds = Number(envOf(worker).WORKER_SHUTDOWN_TIMEOUT_SECONDS);
    // Kept equal to the service's default, so the grace period moves with it.
    expect(drainSeconds).toBe(loadEnv({}).WORKER_SHUTDOWN_TIMEOUT_SECONDS);
    expect(worker.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(drainSeconds + 5);
  });

  it("lets the api's own runs finish or answer before SIGKILL: preStop, API_SHUTDOWN_TIMEOUT_SECONDS and the cancel fit the grace", () => {
    const preStopSeconds = Number(containerOf(api).lifecycle.preStop.exec.command[1]);
    const stopSeconds = Number(envOf(api).API_SHUTDOWN_TIMEOUT_SECONDS ?? loadEnv({}).API_SHUTDOWN_TIMEOUT_SECONDS);
    expect(api.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStopSeconds + stopSeconds + 3 + 5);
  });

  it("points Prometheus' pod discovery at each role's /metrics port", () => {
    const ports = (workload: typeof api) =>
      Object.fromEntries(containerOf(workload).ports.map((port: any) => [port.name, port.containerPort]));
    expect(api.spec.template.metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(ports(api).metrics),
      'prometheus.io/path': '/metrics',
    });
    expect(String(ports(api).metrics)).toBe(envOf(api).API_METRICS_PORT);
    expect(worker.spec.template.metadata.annotations).toMatchObject({ 'prometheus.io/port': String(ports(worker).health) });
    expect(String(ports(worker).health)).toBe(envOf(worker).WORKER_HEALTH_PORT);
  });

  it('requests CPU and memory for every container and caps memory', () => {
    for (const workload of [api, worker, migrate]) {
      const { resources } = containerOf(workload);
      expect(resources.requests, workload.metadata.name).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
      expect(resources.limits.memory, workload.metadata.name).toEqual(expect.any(String));
    }
  });

  it('runs every pod as the image user, non-root, without privilege escalation', () => {
    const imageUser = dockerStages()
      .at(-1)!
      .instructions.filter((instruction) => instruction.keyword === 'USER')
      .at(-1)!.args[0];
    for (const workload of [api, worker, migrate]) {
      const { securityContext } = workload.spec.template.spec;
      expect(`${securityContext.runAsUser}:${securityContext.runAsGroup}`).toBe(imageUser);
      expect(securityContext.runAsNonRoot).toBe(true);
      // What the "restricted" Pod Security Standard requires of every pod.
      expect(securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
      expect(containerOf(workload).securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    }
  });

  it('selects the right pods: the Service targets api pods, each budget its own Deployment', () => {
    const service = find('Service', 'platform-api');
    expect(service.spec.selector).toEqual(api.spec.selector.matchLabels);
    expect(service.spec.ports).toEqual([{ name: 'http', port: 7777, targetPort: 'http' }]);
    for (const workload of [api, worker]) {
      const budget = find('PodDisruptionBudget', workload.metadata.name);
      expect(budget.spec.selector.matchLabels).toEqual(workload.spec.selector.matchLabels);
      expect(workload.spec.template.metadata.labels).toMatchObject(workload.spec.selector.matchLabels);
    }
    expect(find('PodDisruptionBudget', 'platform-api').spec.minAvailable).toBe(1);
    expect(find('PodDisruptionBudget', 'platform-worker').spec.maxUnavailable).toBe(1);
  });
});
