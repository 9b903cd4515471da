/**
 * The dashboard's one way to the host: `fetch` on the operator API with the session cookie and
 * its CSRF token (`X-Platform-CSRF`), JSON in and out, failures decoded from the error envelope.
 */

/** A failed request, with the envelope's stable code and its message for people. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

let csrfToken = "";

/** Set once at start from the shell's data attribute. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** The session's CSRF token (the sign-out form posts it). */
export function csrf(): string {
  return csrfToken;
}

/** GETs started before the first render, each waiting for the first `api` GET of its path. */
const started = new Map<string, Promise<unknown>>();

/**
 * Starts the GET of `path` now, before React has rendered anything, so the first page's request
 * overlaps the bundle's start instead of following it; the first {@link api} GET of `path` takes
 * its answer (later ones fetch again).
 */
export function startEarly<T>(path: string): Promise<T> {
  const answer = request<T>(path);
  answer.catch(() => undefined); // reported by the `api` call that takes it
  started.set(path, answer);
  return answer;
}

/** Calls `path` of the operator API; resolves to its JSON (undefined for 204), rejects with {@link ApiError}. */
export function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const early = init.method === undefined || init.method === "GET" ? started.get(path) : undefined;
  if (early) {
    started.delete(path);
    return early as Promise<T>;
  }
  return request<T>(path, init);
}

async function request<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const headers: Record<string, string> = { "x-platform-csrf": csrfToken, accept: "application/json" };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, {
      method: init.method ?? "GET",
      headers,
      credentials: "same-origin",
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  } catch {
    throw new ApiError("unavailable", "The host did not answer. Is it running?", 0);
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    throw new ApiError("internal", `The host answered ${response.status} without JSON.`, response.status);
  }
  if (!response.ok) {
    const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
    if (response.status === 401)
      window.location.assign(
        `/dashboard/login?next=${encodeURIComponent(location.pathname + location.search)}`,
      );
    throw new ApiError(
      error?.code ?? "internal",
      error?.message ?? `HTTP ${response.status}`,
      response.status,
    );
  }
  return json as T;
}

/** `/v1/deploys/<id>` with the id escaped. */
export function deployPath(id: string, rest = ""): string {
  return `/v1/deploys/${encodeURIComponent(id)}${rest}`;
}
