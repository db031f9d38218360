import { problems } from '../api/problem.ts';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../lib/json-depth.ts';

// JSON nested deeper than MAX_JSON_DEPTH is refused here, after the body is parsed and before the MCP SDK
// sees it: the SDK walks messages recursively and a 20,000-level value made it answer 500 / -32603.
//   - a tools/call argument (or `arguments` itself when it is not an object) too deep: invalid params
//     (-32602, HTTP 200, as any argument the tool refuses) whose `data` is the 400 problem pointing at
//     /arguments/<name>;
//   - any other part of the message, or a batch, too deep: invalid request (-32600, HTTP 400).
// Each argument is measured from its own value, the rest of the message from the message itself.

const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

/** The JSON-RPC answer to a message nested too deep, or undefined when it is not. */
export function deepJsonRefusal(message: unknown): { status: number; body: unknown } | undefined {
  if (Array.isArray(message)) {
    if (!nestedDeeperThan(message, MAX_JSON_DEPTH + 1)) return undefined;
    return answer(
      400,
      null,
      INVALID_REQUEST,
      `A message of the batch nests deeper than ${MAX_JSON_DEPTH} levels.`,
    );
  }
  if (message === null || typeof message !== 'object') return undefined;
  const { id, params } = message as { id?: unknown; params?: unknown };
  const answerId = typeof id === 'string' || typeof id === 'number' ? id : null;
  const hasArguments = params !== null && typeof params === 'object' && !Array.isArray(params);
  const { arguments: args, ...otherParams } = hasArguments ? (params as Record<string, unknown>) : {};
  const envelope = hasArguments ? { ...message, params: otherParams } : message;
  if (nestedDeeperThan(envelope)) {
    return answer(400, answerId, INVALID_REQUEST, `The message nests deeper than ${MAX_JSON_DEPTH} levels.`);
  }
  const pointers =
    args !== null && typeof args === 'object' && !Array.isArray(args)
      ? Object.entries(args)
          .filter(([, value]) => nestedDeeperThan(value))
          .map(([name]) => `/arguments/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`)
      : nestedDeeperThan(args)
        ? ['/arguments']
        : [];
  if (pointers.length === 0) return undefined;
  const issue = `is nested deeper than ${MAX_JSON_DEPTH} levels`;
  const problem = problems.validation(pointers.map((pointer) => ({ pointer, message: issue }))).toJSON();
  const tool = typeof otherParams.name === 'string' ? ` for tool ${otherParams.name}` : '';
  const where = pointers
    .slice(0, 10)
    .map((pointer) => `${pointer} ${issue}`)
    .join('; ');
  return answer(200, answerId, INVALID_PARAMS, `Invalid arguments${tool}: ${where}`, problem);
}

function answer(status: number, id: string | number | null, code: number, message: string, data?: unknown) {
  return { status, body: { jsonrpc: '2.0', id, error: { code, message, ...(data ? { data } : {}) } } };
}
