// The SDK's errors, in a module of their own so that every part throws the same class.

/** An error answer of the API, with its HTTP status and stable error code. */
export class VitolaError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "VitolaError";
    this.status = status;
    this.code = code;
  }
}

/**
 * A live subscription's failure (onError of subscribeSessions): the server's
 * code (a GraphQL error's `extensions.code`, a REST error's `error`), or
 * `network_error`, `timeout` (a silent connection), `stream_ended`.
 */
export class LiveError extends VitolaError {
  /** True when the subscription reconnects after it; false when it stopped for good. */
  readonly willRetry: boolean;
  constructor(status: number, code: string, message: string, willRetry: boolean) {
    super(status, code, message);
    this.name = "LiveError";
    this.willRetry = willRetry;
  }
}
