import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { LegacyRestTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';

import { ComponentDto } from '@app/runs';

export const A2A_PATH = '/a2a';

/** The bindings every card advertises, both served at the component's A2A URL (JSON-RPC at it, HTTP+JSON beneath it). */
export const A2A_BINDINGS = ['JSONRPC', 'HTTP+JSON'] as const;

export interface CardOptions {
  /** PUBLIC_URL: the interfaces' URLs are absolute. */
  baseUrl: string;
  /** URL segment of the kind: agents, teams, workflows. */
  resource: string;
  provider: string;
  version: string;
  /** False on an instance without authentication: the bearer scheme is advertised but not required. */
  credentialRequired: boolean;
}

/** A component's agent card: its A2A URL for each binding and protocol version, streaming, and the bearer scheme every route takes. */
export function agentCard(component: ComponentDto, options: CardOptions): AgentCard {
  const url = `${options.baseUrl.replace(/\/$/, '')}${A2A_PATH}/${options.resource}/${encodeURIComponent(component.id)}`;
  return {
    name: component.name,
    description: component.description || component.name,
    // Every protocol served is declared: v1.0 over both bindings, and v0.3 over JSON-RPC (a request without an
    // A2A-Version header), listed after them so that a v1.0 client picks v1.0.
    supportedInterfaces: duplicateInterfacesForLegacy(
      A2A_BINDINGS.map((protocolBinding) => ({ url, protocolBinding, tenant: '', protocolVersion: A2A_PROTOCOL_VERSION })),
      ['JSONRPC'],
    ),
    provider: { organization: options.provider, url: options.baseUrl },
    version: options.version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { scheme: 'Bearer', bearerFormat: '', description: 'A service-account token, a JWT or the security key' },
        },
      },
    },
    securityRequirements: options.credentialRequired ? [{ schemes: { bearer: { list: [] } } }] : [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: component.id,
        name: component.name,
        description: component.description || component.name,
        tags: [component.type],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

/**
 * The card in v0.3's shape, for a client that asks without an A2A-Version header (or names 0.3): `url`,
 * `preferredTransport` and `protocolVersion` name the v0.3 JSON-RPC interface, which is what a v0.3 client
 * reads. The v1.0 `supportedInterfaces` stay in it, as the SDK's own server serves this card, so a v1.0 client
 * that sent no header still finds every interface.
 */
export async function legacyAgentCard(card: AgentCard): Promise<unknown> {
  // The SDK translates a card to v0.3 only behind a transport: its v0.3 HTTP+JSON one does it for the extended card.
  const source: Pick<A2ARequestHandler, 'getAuthenticatedExtendedAgentCard'> = {
    getAuthenticatedExtendedAgentCard: () => Promise.resolve(card),
  };
  const legacy = await new LegacyRestTransportHandler(source as A2ARequestHandler).getAuthenticatedExtendedAgentCard(
    new ServerCallContext(),
  );
  const { supportedInterfaces } = AgentCard.toJSON(card) as { supportedInterfaces: unknown };
  return { ...legacy, supportedInterfaces };
}
