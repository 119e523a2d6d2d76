// Verifies Vitola's signed fulfillment callbacks on the receiving server. Web
// Crypto only (globalThis.crypto.subtle), so the same code runs in Node 20+,
// Deno, Bun and edge runtimes. The Go package sdk/callback follows the same
// rules, and both are tested with the vectors of test/callback-vectors.json.

/** The event types Vitola sends today; acknowledge (2xx) a type you do not know. */
export type CallbackEventType =
  | "purchase.succeeded"
  | "purchase.refunded"
  | "reload.succeeded"
  | "reload.failed"
  | "session.expired"
  | "session.cancelled";

/** A verified callback. Deduplicate on `id`: a retried or replayed callback carries the same id and body. */
export interface CallbackEvent {
  /** fev_… */
  id: string;
  type: CallbackEventType | (string & {});
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** The payload, a JSON object whose fields depend on type. */
  data: Record<string, unknown>;
}

/** Why a callback was refused; the same codes as the Go package's. */
export type CallbackErrorCode =
  | "missing_timestamp"
  | "missing_signature"
  | "invalid_timestamp"
  | "timestamp_out_of_tolerance"
  | "no_matching_signature"
  | "invalid_body"
  | "misconfigured";

/**
 * A refused callback. `status` is what to answer: 401 for a callback that
 * cannot be trusted, 400 for a signed body that is not an event, 500 for the
 * receiver's own misconfiguration. The message never holds a secret or a
 * signature.
 */
export class CallbackError extends Error {
  readonly code: CallbackErrorCode;
  readonly status: 400 | 401 | 500;
  constructor(code: CallbackErrorCode, message: string) {
    super(message);
    this.name = "CallbackError";
    this.code = code;
    this.status = code === "invalid_body" ? 400 : code === "misconfigured" ? 500 : 401;
  }
}

/** The default bound on |now − X-Service-Timestamp|, in seconds. */
export const CALLBACK_TOLERANCE_SECONDS = 300;

export interface VerifyCallbackOptions {
  /**
   * The client's signing secret (whsec_…), or several: during a rotation,
   * hold the old and the new one. A callback is accepted when any of its v1
   * values matches any secret.
   */
  secrets: string | readonly string[];
  /** The request's headers: a Headers (fetch, Next.js) or Node's req.headers. */
  headers: Headers | Record<string, string | string[] | undefined>;
  /**
   * The raw body, exactly as received: a Buffer (express.raw), a Uint8Array or
   * an ArrayBuffer, or the text of `await request.text()`. Never a parsed object.
   */
  body: string | Uint8Array | ArrayBuffer;
  /** The receiver's clock: a Date or milliseconds since the epoch (default: now). */
  now?: Date | number;
  /** The bound on |now − timestamp| in seconds, both ways (default 300). */
  toleranceSeconds?: number;
  /** A Web Crypto implementation (default globalThis.crypto; on Node 18 pass require("node:crypto").webcrypto). */
  crypto?: CallbackCrypto;
}

/**
 * The part of Web Crypto that verifyCallback uses: globalThis.crypto and Node's
 * webcrypto have it. Spelled out so that the types need no DOM library.
 */
export interface CallbackCrypto {
  subtle: {
    importKey(format: "raw", keyData: ArrayBuffer, algorithm: { name: "HMAC"; hash: "SHA-256" }, extractable: boolean, keyUsages: ["sign"]): Promise<object>;
    sign(algorithm: "HMAC", key: object, data: ArrayBuffer): Promise<ArrayBuffer>;
  };
}

const TIMESTAMP = "X-Service-Timestamp";
const SIGNATURE = "X-Service-Signature";
// Made when used: a TextEncoder made at load would keep this module in the
// bundle of a page that imports only the feed client.
const utf8 = (s: string) => new TextEncoder().encode(s);

/**
 * Verifies a callback: both headers and the clock, then the signature over the
 * raw body, then the body. Resolves to the event, or rejects with a
 * CallbackError. Record the event, deduplicated on its id, in the same
 * transaction as the fulfillment, and answer 2xx only after the commit.
 */
export async function verifyCallback(options: VerifyCallbackOptions): Promise<CallbackEvent> {
  const secrets = typeof options.secrets === "string" ? [options.secrets] : [...(options.secrets ?? [])];
  if (secrets.length === 0) throw misconfigured("no signing secret is configured: set the client's whsec_… secret");
  secrets.forEach((s, i) => {
    // An empty key would let anyone sign.
    if (typeof s !== "string" || s === "") throw misconfigured(`signing secret ${i + 1} of ${secrets.length} is empty`);
  });
  const tolerance = options.toleranceSeconds ?? CALLBACK_TOLERANCE_SECONDS;
  if (!(tolerance > 0) || !Number.isFinite(tolerance)) throw misconfigured("toleranceSeconds must be a positive number of seconds");
  const nowMs = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime();
  if (!Number.isFinite(nowMs)) throw misconfigured("now is not a valid time");
  const subtle = (options.crypto ?? globalThis.crypto)?.subtle;
  if (!subtle) throw misconfigured('Web Crypto is unavailable: use Node 20 or newer, or pass the crypto option (webcrypto of "node:crypto")');
  const body = bytes(options.body);

  // The headers first: everything that can be refused before the body.
  const ts = headerValues(options.headers, TIMESTAMP);
  if (ts.length === 0) throw new CallbackError("missing_timestamp", `the ${TIMESTAMP} header is missing: it must hold the Unix seconds at which Vitola signed the callback`);
  const sigs = headerValues(options.headers, SIGNATURE);
  if (sigs.length === 0) throw new CallbackError("missing_signature", `the ${SIGNATURE} header is missing: it must hold v1=<hex signature>`);
  if (ts.length > 1) throw new CallbackError("invalid_timestamp", `the ${TIMESTAMP} header was sent ${ts.length} times; it must be sent once`);
  const timestamp = ts[0]!;
  if (!/^[0-9]{1,18}$/.test(timestamp)) throw new CallbackError("invalid_timestamp", `the ${TIMESTAMP} header is not a whole number of Unix seconds`);
  const age = Math.floor(nowMs / 1000) - Number(timestamp);
  if (age > tolerance) {
    throw new CallbackError("timestamp_out_of_tolerance", `the callback was signed ${age} s ago, more than the ${tolerance} s allowed: a replayed callback, or this server's clock runs ahead (check NTP)`);
  }
  if (-age > tolerance) {
    throw new CallbackError("timestamp_out_of_tolerance", `the callback is dated ${-age} s in the future, more than the ${tolerance} s allowed: this server's clock runs behind (check NTP)`);
  }

  const received = v1Values(sigs).map((v) => utf8(v));
  if (received.length === 0) throw new CallbackError("no_matching_signature", `the ${SIGNATURE} header holds no v1= value`);
  let matched = false;
  for (const secret of secrets) {
    const expected = utf8(await hmacHex(subtle, secret, timestamp, body));
    for (const got of received) {
      if (timingSafeEqual(got, expected)) matched = true;
    }
  }
  if (!matched) {
    throw new CallbackError(
      "no_matching_signature",
      `no v1 signature in ${SIGNATURE} matches a configured signing secret (${received.length} v1 value(s), ${secrets.length} secret(s)): check the secret, and that the body is verified as the exact bytes received (lowercase hex expected)`,
    );
  }
  return parse(body);
}

/**
 * The X-Service-Signature value ("v1=<hex>") of body signed with secret at
 * timestamp (Unix seconds; send it as X-Service-Timestamp), for tests of a
 * receiver. For a rotation, join the values of both secrets with a comma.
 */
export async function signCallback(secret: string, body: string | Uint8Array | ArrayBuffer, timestamp: number, crypto: CallbackCrypto = globalThis.crypto): Promise<string> {
  return `v1=${await hmacHex(crypto.subtle, secret, String(Math.trunc(timestamp)), bytes(body))}`;
}

/** Compares in time that depends on the lengths only (which are not secret). */
function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

async function hmacHex(subtle: CallbackCrypto["subtle"], secret: string, timestamp: string, body: Uint8Array): Promise<string> {
  const secretBytes = utf8(secret);
  const keyData = new Uint8Array(secretBytes.length);
  keyData.set(secretBytes);
  const key = await subtle.importKey("raw", keyData.buffer, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const prefix = utf8(`${timestamp}.`);
  const message = new Uint8Array(prefix.length + body.length);
  message.set(prefix);
  message.set(body, prefix.length);
  const mac = new Uint8Array(await subtle.sign("HMAC", key, message.buffer));
  let hex = "";
  for (const b of mac) hex += b.toString(16).padStart(2, "0");
  return hex;
}

function bytes(body: unknown): Uint8Array {
  if (typeof body === "string") return utf8(body);
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw misconfigured("the body must be the raw bytes or text received, not a parsed object: use express.raw({ type: \"application/json\" }) or await request.text()");
}

/** A header's non-empty values, its name matched without regard to case. */
function headerValues(headers: VerifyCallbackOptions["headers"], name: string): string[] {
  let raw: string[] = [];
  if (typeof (headers as Headers)?.get === "function") {
    const v = (headers as Headers).get(name);
    if (v !== null) raw = [v];
  } else {
    const lower = name.toLowerCase();
    for (const [k, v] of Object.entries(headers ?? {})) {
      if (k.toLowerCase() === lower && v !== undefined) raw = raw.concat(v);
    }
  }
  return raw.map((v) => v.replace(/^[ \t]+|[ \t]+$/g, "")).filter((v) => v !== "");
}

/** The v1 values of comma-separated "scheme=value" items; other schemes are ignored. */
function v1Values(lines: string[]): string[] {
  const out: string[] = [];
  for (const line of lines) {
    for (const item of line.split(",")) {
      const t = item.replace(/^[ \t]+|[ \t]+$/g, "");
      const eq = t.indexOf("=");
      if (eq >= 0 && t.slice(0, eq) === "v1") out.push(t.slice(eq + 1));
    }
  }
  return out;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function parse(body: Uint8Array): CallbackEvent {
  const invalid = (what: string) => new CallbackError("invalid_body", `the signature is valid but the body${what}`);
  let value: unknown;
  try {
    // ignoreBOM keeps a byte order mark, which is not JSON (as in Go).
    value = JSON.parse(new TextDecoder("utf-8", { ignoreBOM: true }).decode(body));
  } catch {
    throw invalid(" is not a JSON object");
  }
  if (!isObject(value)) throw invalid(" is not a JSON object");
  for (const name of ["id", "type", "createdAt"]) {
    const v = value[name];
    if (typeof v !== "string" || v === "") throw invalid(`'s "${name}" is not a non-empty string`);
  }
  const createdAt = value.createdAt as string;
  if (!RFC3339.test(createdAt) || Number.isNaN(Date.parse(createdAt))) throw invalid(`'s "createdAt" is not an RFC 3339 date-time`);
  if (!isObject(value.data)) throw invalid(`'s "data" is not a JSON object`);
  return { id: value.id as string, type: value.type as string, createdAt, data: value.data };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function misconfigured(message: string): CallbackError {
  return new CallbackError("misconfigured", message);
}
