// API server errors in one shape, whichever client produced them (client-node's ApiException,
// its Watch errors, the in-memory fake), with the Status reason and message the server sent.

export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: number;
  /** metav1.Status reason: Conflict, NotFound, Forbidden, AlreadyExists, Expired, Invalid, … */
  readonly reason: string;
  readonly retryAfterSeconds: number | undefined;
  /** The fields an Invalid (422) answer names (metav1.Status details.causes[].field). */
  readonly fields: readonly string[];
  /** The messages of the answer's causes (an eviction's 429 names the PodDisruptionBudget there). */
  readonly causes: readonly string[];

  constructor(code: number, reason: string, message: string, retryAfterSeconds?: number, fields: readonly string[] = [], causes: readonly string[] = []) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
    this.fields = fields;
    this.causes = causes;
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.code === 409 && err.reason !== 'AlreadyExists';
export const isAlreadyExists = (err: unknown): boolean => err instanceof ApiError && err.reason === 'AlreadyExists';
export const isForbidden = (err: unknown): boolean => err instanceof ApiError && err.code === 403;
export const isGone = (err: unknown): boolean => err instanceof ApiError && err.code === 410;
/**
 * A create refused because its namespace is being deleted (the NamespaceLifecycle admission
 * plugin: 403, "unable to create new content in namespace X because it is being terminated",
 * with the cause NamespaceTerminating): it will never succeed.
 */
export const isNamespaceTerminating = (err: unknown): boolean =>
  err instanceof ApiError && err.code === 403 && [err.message, ...err.causes].some((m) => /because it is being terminated/.test(m));
/**
 * A call refused because its namespace no longer exists (404, `namespaces "X" not found`: the
 * NamespaceLifecycle plugin's answer to a create there, and the API server's to a watch there).
 */
export const isNamespaceGone = (err: unknown): boolean => err instanceof ApiError && err.code === 404 && /^namespaces "[^"]*" not found/.test(err.message);

interface StatusBody {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { retryAfterSeconds?: number; causes?: { field?: string; message?: string }[] };
}

function parseStatus(body: unknown): StatusBody | undefined {
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as StatusBody;
    } catch {
      return body ? { message: body } : undefined;
    }
  }
  if (body && typeof body === 'object') return body as StatusBody;
  return undefined;
}

const reasonByCode: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * Converts any thrown value into an ApiError when it carries an HTTP status; otherwise returns it
 * unchanged (network errors, bugs).
 */
export function toApiError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  if (!err || typeof err !== 'object') return err;
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; headers?: Record<string, string>; message?: string };
  const code = typeof e.code === 'number' ? e.code : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  if (code === undefined || code < 400) return err;
  const status = parseStatus(e.body);
  const retryHeader = e.headers?.['retry-after'];
  const retryAfter = status?.details?.retryAfterSeconds ?? (retryHeader !== undefined ? Number(retryHeader) : undefined);
  const fields = (status?.details?.causes ?? []).flatMap((c) => (c.field ? [c.field] : []));
  const causes = (status?.details?.causes ?? []).flatMap((c) => (c.message ? [c.message] : []));
  return new ApiError(
    code,
    status?.reason ?? reasonByCode[code] ?? 'Unknown',
    status?.message ?? e.message ?? `HTTP ${code}`,
    Number.isFinite(retryAfter) ? retryAfter : undefined,
    fields,
    causes,
  );
}

/** Awaits a client call, converting its failure to ApiError where it is one. */
export async function apiCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw toApiError(err);
  }
}

/**
 * The kind is not served (its CRD is not installed): a 404, or client-node's own refusal when
 * discovery does not know the kind ("Unrecognized API version and kind").
 */
export const isNotServed = (err: unknown): boolean =>
  (err instanceof ApiError && err.code === 404) || /Unrecognized API version and kind/i.test(String((err as Error)?.message));

/** Try again after a known delay (HTTP 429 Retry-After, a rate limit, a budget window). */
export class RetryAfterError extends Error {
  override name = 'RetryAfterError';
  readonly delayMs: number;

  constructor(message: string, delayMs: number) {
    super(message);
    if (!(delayMs >= 0)) throw new TypeError(`RetryAfterError delay must be ≥ 0 ms, got ${delayMs}`);
    this.delayMs = delayMs;
  }
}
