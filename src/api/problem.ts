// RFC 9457 problem details: the one error body of the REST API, and the content of MCP tool errors.

export interface ValidationIssue {
  /** JSON pointer into the request: /body/name, /query/limit, /params/account. */
  pointer: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  errors?: ValidationIssue[];
  /** How many issues the request had, when `errors` lists only the first MAX_ISSUES. */
  errorCount?: number;
}

const TYPE_BASE = 'https://docs.l10n.dev/problems/';
/** The most issues a validation problem lists. */
const MAX_ISSUES = 100;

/** The slice of an HTTP response that writing a problem needs (express's Response has it). */
interface ProblemSink {
  setHeader(name: string, value: string): unknown;
  status(code: number): { type(mime: string): { send(body: string): unknown } };
}

export class Problem extends Error {
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly errors: ValidationIssue[] | undefined;
  readonly errorCount: number | undefined;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    slug: string,
    title: string,
    detail?: string,
    extra: { errors?: ValidationIssue[]; errorCount?: number; headers?: Record<string, string> } = {},
  ) {
    super(detail ?? title);
    this.name = 'Problem';
    this.status = status;
    this.type = `${TYPE_BASE}${slug}`;
    this.title = title;
    this.detail = detail;
    this.errors = extra.errors;
    this.errorCount = extra.errorCount;
    this.headers = extra.headers ?? {};
  }

  toJSON(): ProblemBody {
    return {
      type: this.type,
      title: this.title,
      status: this.status,
      ...(this.detail ? { detail: this.detail } : {}),
      ...(this.errors ? { errors: this.errors } : {}),
      ...(this.errorCount !== undefined ? { errorCount: this.errorCount } : {}),
    };
  }
}

export const problems = {
  /**
   * The first MAX_ISSUES issues: a body of 400,000 unknown keys is refused with a short answer, not a
   * 30 MB list (which took longer to write than the body took to send, for a client to read nothing of).
   */
  validation: (errors: ValidationIssue[], detail = 'The request is not valid; see errors.') =>
    new Problem(
      400,
      'validation-failed',
      'Invalid request',
      errors.length > MAX_ISSUES ? `${detail} (the first ${MAX_ISSUES} of ${errors.length})` : detail,
      {
        errors: errors.slice(0, MAX_ISSUES),
        ...(errors.length > MAX_ISSUES && { errorCount: errors.length }),
      },
    ),
  badRequest: (detail: string, pointer?: string) =>
    new Problem(400, 'validation-failed', 'Invalid request', detail, {
      errors: pointer ? [{ pointer, message: detail }] : undefined,
    }),
  unauthorized: (detail: string, challenge: string) =>
    new Problem(401, 'unauthorized', 'Authentication required', detail, {
      headers: { 'WWW-Authenticate': challenge },
    }),
  insufficientScope: (detail: string, challenge: string) =>
    new Problem(403, 'insufficient-scope', 'Insufficient scope', detail, {
      headers: { 'WWW-Authenticate': challenge },
    }),
  forbidden: (detail: string) => new Problem(403, 'forbidden', 'Forbidden', detail),
  notFound: (detail = 'No such resource, or you cannot see it.') =>
    new Problem(404, 'not-found', 'Not found', detail),
  methodNotAllowed: (allowed: string[], detail = `Allowed: ${allowed.join(', ')}`) =>
    new Problem(405, 'method-not-allowed', 'Method not allowed', detail, {
      headers: { Allow: allowed.join(', ') },
    }),
  expectationFailed: (detail: string) => new Problem(417, 'expectation-failed', 'Expectation failed', detail),
  /** `pointer`: the part of the request that conflicts (a taken handle), for a form to show it there. */
  conflict: (detail: string, pointer?: string) =>
    new Problem(409, 'conflict', 'Conflict', detail, {
      errors: pointer ? [{ pointer, message: detail }] : undefined,
    }),
  /** The thing exists but can no longer be used (an expired or revoked invitation). */
  gone: (detail: string) => new Problem(410, 'gone', 'Gone', detail),
  preconditionFailed: (detail: string) =>
    new Problem(412, 'precondition-failed', 'Precondition failed', detail),
  preconditionRequired: (detail: string) =>
    new Problem(428, 'precondition-required', 'Precondition required', detail),
  tooManyRequests: (detail: string, retryAfterSeconds: number) =>
    new Problem(429, 'rate-limited', 'Too many requests', detail, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  payloadTooLarge: (detail: string) =>
    new Problem(413, 'payload-too-large', 'Payload too large', detail, {
      errors: [{ pointer: '/body', message: detail }],
    }),
  headersTooLarge: (detail: string) =>
    new Problem(431, 'headers-too-large', 'Request header fields too large', detail),
  requestTimeout: (detail: string) => new Problem(408, 'request-timeout', 'Request timeout', detail),
  unsupportedMediaType: (detail: string) =>
    new Problem(415, 'unsupported-media-type', 'Unsupported media type', detail),
  /** The database (or another dependency) is unreachable for now; the request changed nothing. */
  serviceUnavailable: (detail: string, retryAfterSeconds: number) =>
    new Problem(503, 'service-unavailable', 'Service unavailable', detail, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  internal: () => new Problem(500, 'internal', 'Internal error', 'Something went wrong on our side.'),
};

/** Writes a problem as an HTTP response: its status, its headers (challenges, Retry-After) and the body. */
export function sendProblem(res: ProblemSink, problem: Problem): void {
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.status(problem.status).type('application/problem+json').send(JSON.stringify(problem.toJSON()));
}
