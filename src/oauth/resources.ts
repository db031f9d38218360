// The two protected resources (RFC 8707 resource indicators) this authorization server issues tokens for.
// A token is bound to exactly one of them; the pipeline compares `credential.audience` with resourceFor().
import type { Door } from '../authz/caller.ts';

export function resourceFor(door: Door, baseUrl: string): string {
  return door === 'mcp' ? `${baseUrl}/mcp` : `${baseUrl}/api`;
}

/** Agents are most of our OAuth clients, so a request that names no resource gets the MCP audience. */
export function defaultResource(baseUrl: string): string {
  return resourceFor('mcp', baseUrl);
}

/**
 * The canonical resource for an indicator a client sent, or undefined when it is not ours. A trailing
 * slash is tolerated because some clients derive the indicator from a URL they were configured with.
 */
export function canonicalResource(indicator: string, baseUrl: string): string | undefined {
  const trimmed = indicator.endsWith('/') ? indicator.slice(0, -1) : indicator;
  for (const door of ['mcp', 'rest'] as const) {
    if (trimmed === resourceFor(door, baseUrl)) return resourceFor(door, baseUrl);
  }
  return undefined;
}

/** For the pipeline: an OAuth token is accepted only at the door whose resource it was issued for. */
export function audienceAccepts(
  credential: { kind: string; audience?: string },
  door: Door,
  baseUrl: string,
): boolean {
  return credential.kind !== 'oauth' || credential.audience === resourceFor(door, baseUrl);
}
