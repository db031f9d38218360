// The domain's own errors. Domain rules do not know about HTTP: each door maps these to its error format
// (the operation pipeline turns them into RFC 9457 problems, which REST sends and MCP wraps in tool errors).

/** Input that breaks a domain rule (a locale tag, a handle, a URL); `pointer` names the field when known. */
export class InvalidInput extends Error {
  readonly pointer: string | undefined;

  constructor(message: string, pointer?: string) {
    super(message);
    this.name = 'InvalidInput';
    this.pointer = pointer;
  }
}
