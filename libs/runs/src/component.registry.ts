import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';

import { Env } from '@app/config';
import { clipped } from '@app/validation';

import { Component, ComponentKind } from './component';
import { DEMO_COMPONENTS } from './demo-components';
import { RunErrorCode, RunException } from './runs.exception';

/** Injection token of the components a deployment adds (COMPONENTS_MODULE, through RunsModule.forRoot({ components })). */
export const DEPLOYMENT_COMPONENTS = Symbol('DEPLOYMENT_COMPONENTS');

/** Every agent, team and workflow this service can run, by kind and id. */
@Injectable()
export class ComponentRegistry implements OnModuleInit {
  private readonly components = new Map<string, Component>();

  constructor(
    private readonly env: Env,
    @Optional() @Inject(DEPLOYMENT_COMPONENTS) private readonly deployment: readonly Component[] = [],
  ) {}

  onModuleInit(): void {
    this.register(...(this.env.DEMO_COMPONENTS ? DEMO_COMPONENTS : []), ...this.deployment);
    const logger = new Logger(ComponentRegistry.name);
    if (this.env.COMPONENTS_MODULE) {
      const ids = this.deployment.map((component) => `${component.kind}/${component.id}`);
      logger.log(`Loaded ${ids.length} component(s) from ${this.env.COMPONENTS_MODULE}: ${ids.join(', ') || 'none'}`);
    }
    // Said here, in the process's log format: a component module is loaded before the app's logger exists.
    for (const component of this.deployment.filter((loaded) => loaded.bootWarning)) {
      logger.warn(`${component.kind[0].toUpperCase()}${component.kind.slice(1)} '${component.id}': ${component.bootWarning}`);
    }
  }

  /** Boot fails on a duplicate id within a kind: a run must never reach the wrong component. */
  register(...components: readonly Component[]): void {
    for (const component of components) {
      const key = `${component.kind}/${component.id}`;
      if (this.components.has(key)) {
        throw new Error(`Component ${key} is registered twice`);
      }
      this.components.set(key, component);
    }
  }

  list(kind: ComponentKind): Component[] {
    return [...this.components.values()].filter((component) => component.kind === kind);
  }

  /** The component, or undefined when this process has none by that kind and id. */
  find(kind: ComponentKind, id: string): Component | undefined {
    return this.components.get(`${kind}/${id}`);
  }

  get(kind: ComponentKind, id: string): Component {
    const component = this.find(kind, id);
    if (!component) {
      throw new RunException(RunErrorCode.ComponentNotFound, `${kind[0].toUpperCase()}${kind.slice(1)} '${clipped(id, 128)}' not found`);
    }
    return component;
  }
}
