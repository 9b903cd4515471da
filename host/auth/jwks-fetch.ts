import { LIMITS } from "../../sdk/protocol/index.js";

/**
 * A fetch for one issuer's JWKS (jose's `customFetch`) that reads at most `LIMITS.jwksBytes` of
 * the answer and passes on at most `LIMITS.jwksKeys` keys, and after a failed fetch does not ask
 * again for `LIMITS.jwksRetryMs`, answering with the last good JWKS meanwhile while it is younger
 * than `LIMITS.jwksStaleMs` (else failing at once). jose reads a JWKS whole and looks through every key of it for each token:
 * a 61 MB one of 60,000 keys grew the host by 487 MB and then cost every sign-in 6-10 ms of the
 * main thread; and jose asks again at once after a failure, so an issuer answering 500 was asked
 * at every sign-in. Serving the last good JWKS keeps one failed refresh (when jose's cache ages
 * out) from refusing every sign-in of the issuer until the next.
 */
export function boundedJwksFetch(): (url: string, options: RequestInit) => Promise<Response> {
  let failedAt = Number.NEGATIVE_INFINITY;
  let lastGood: string | undefined;
  let lastGoodAt = Number.NEGATIVE_INFINITY;
  const answer = (text: string) =>
    new Response(text, { status: 200, headers: { "content-type": "application/json" } });
  // Served for `LIMITS.jwksStaleMs` after its fetch at most: a key the issuer removed is not trusted for good.
  const kept = () => (Date.now() - lastGoodAt < LIMITS.jwksStaleMs ? lastGood : undefined);
  const failed = (error: Error): Response => {
    failedAt = Date.now();
    const last = kept();
    if (last !== undefined) return answer(last);
    throw error;
  };
  return async (url, options) => {
    if (Date.now() - failedAt < LIMITS.jwksRetryMs) {
      const last = kept();
      if (last !== undefined) return answer(last);
      throw new Error(
        `The JWKS at ${url} failed moments ago; it is asked again ${LIMITS.jwksRetryMs} ms after.`,
      );
    }
    let text: string;
    try {
      const response = await fetch(url, options);
      if (response.status !== 200) {
        await response.body?.cancel();
        return failed(new Error(`The JWKS at ${url} answered ${response.status}.`));
      }
      text = await boundedText(response, LIMITS.jwksBytes);
      const jwks = JSON.parse(text) as { keys?: unknown };
      if (!Array.isArray(jwks.keys) || jwks.keys.length > LIMITS.jwksKeys)
        throw new Error(`The JWKS at ${url} must list its keys, at most ${LIMITS.jwksKeys} of them.`);
    } catch (error) {
      return failed(error as Error);
    }
    lastGood = text;
    lastGoodAt = Date.now();
    return answer(text);
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
