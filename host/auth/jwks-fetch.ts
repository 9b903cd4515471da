import { LIMITS } from "../../sdk/protocol/index.js";

/**
 * A fetch for one issuer's JWKS (jose's `customFetch`) that reads at most
 * `LIMITS.jwksBytes` of the answer and passes on at most `LIMITS.jwksKeys` keys, and after a
 * failed fetch answers the next ones as failed at once for `LIMITS.jwksRetryMs`. jose reads a
 * JWKS whole and looks through every key of it for each token: a 61 MB one of 60,000 keys grew
 * the host by 487 MB and then cost every sign-in 6-10 ms of the main thread; and jose fetches
 * again at once after a failure, so an issuer answering 500 was asked again at every sign-in.
 */
export function boundedJwksFetch(): (url: string, options: RequestInit) => Promise<Response> {
  let failedAt = Number.NEGATIVE_INFINITY;
  return async (url, options) => {
    if (Date.now() - failedAt < LIMITS.jwksRetryMs)
      throw new Error(
        `The JWKS at ${url} failed moments ago; it is asked again ${LIMITS.jwksRetryMs} ms after.`,
      );
    try {
      const response = await fetch(url, options);
      if (response.status !== 200) {
        // jose refuses it (and any answer but 200): a failure as any other.
        failedAt = Date.now();
        await response.body?.cancel();
        return new Response(null, { status: response.status });
      }
      const text = await boundedText(response, LIMITS.jwksBytes);
      const jwks = JSON.parse(text) as { keys?: unknown };
      if (!Array.isArray(jwks.keys) || jwks.keys.length > LIMITS.jwksKeys)
        throw new Error(`The JWKS at ${url} must list its keys, at most ${LIMITS.jwksKeys} of them.`);
      return new Response(text, { status: 200, headers: { "content-type": "application/json" } });
    } catch (error) {
      failedAt = Date.now();
      throw error;
    }
  };
}

/** The body of `response` as text, or throws once it passes `limit` bytes (the rest is not read). */
async function boundedText(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > limit) {
      await reader.cancel();
      throw new Error(`The JWKS is larger than ${limit} bytes.`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
