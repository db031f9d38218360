import {
  type JSONRPCRequest,
  ProtocolError,
  ProtocolErrorCode,
  type Result,
  Server,
  type ServerContext,
} from '@modelcontextprotocol/server';

// The SDK checks the params of every MCP method it dispatches (initialize, ping, server/discover,
// tools/list, tools/call) against that method's schema at the request's revision before a handler runs.
// Its own codec contract says a failed check is -32602, but in @modelcontextprotocol/server 2.4.0 the
// dispatch throws a plain Error whose message is zod's issue list as pretty-printed JSON, so a client's
// mistake was answered as -32603 internal error with that dump (tools/call: -32602, the same dump).
// Upstream: modelcontextprotocol/typescript-sdk#2284 (fix proposed in #2492, not released). This module
// can go once the SDK answers -32602 naming the param itself.

type RequestHandler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/** How many of the failed checks a message lists: a few say what to fix, thousands would be a dump again. */
const MAX_LISTED_ISSUES = 5;

/**
 * The SDK's low-level Server, except that a request whose params do not fit the method is answered as
 * invalid params (-32602) with a message naming each param and what was expected. Errors of our handlers
 * are untouched, so an internal error of ours stays -32603.
 */
export class ParamsCheckingServer extends Server {
  // `_wrapHandler` is the SDK's hook for role classes to wrap every registered request handler (Server
  // uses it for tools/call). It also runs for the handlers the SDK registers itself (initialize, ping).
  protected override _wrapHandler(method: string, handler: RequestHandler): RequestHandler {
    const wrapped = super._wrapHandler(method, handler);
    return async (request, ctx) => {
      // The codec the SDK checks this request with (it can change only once a handler has run).
      const codec = this._wireCodec();
      try {
        return await wrapped(request, ctx);
      } catch (error) {
        // A request that fails the check never reaches a handler, so when the SDK's own codec refuses it,
        // the error is that check. Asked only after a failure: a good request is parsed no more than before.
        const outcome = codec.validateRequest(method, request);
        if (outcome.ok || outcome.reason !== 'invalid') throw error;
        throw invalidParams(method, outcome.message);
      }
    };
  }
}

interface Issue {
  path: (string | number)[];
  message: string;
}

/** `Invalid params for tools/list: params.cursor: Invalid input: expected string, received number`. */
function invalidParams(method: string, report: string): ProtocolError {
  const issues = issuesOf(report);
  const listed = issues
    .slice(0, MAX_LISTED_ISSUES)
    .map((issue) => `${issue.path.join('.') || 'the request'}: ${issue.message}`);
  if (issues.length > MAX_LISTED_ISSUES) listed.push(`${issues.length - MAX_LISTED_ISSUES} more`);
  const where = listed.length > 0 ? listed.join('; ') : 'they do not fit the method';
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid params for ${method}: ${where}`);
}

/**
 * The issues of the codec's report, which is zod's error message: its issues as JSON, each with its path
 * from the request (`params`, `cursor`). Anything else gives none, and the message names only the method.
 */
function issuesOf(report: string): Issue[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(report);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (issue): issue is Issue =>
      typeof issue?.message === 'string' &&
      Array.isArray(issue.path) &&
      issue.path.every((key: unknown) => typeof key === 'string' || typeof key === 'number'),
  );
}
