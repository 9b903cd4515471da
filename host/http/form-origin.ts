import type { Context } from "koa";

/** The host (`name[:port]`) of an Origin or Referer value, or undefined when it is not an http(s) URL. */
function hostOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.host : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a state-changing form (dashboard sign-in, deletes) was sent by a page of this very origin,
 * judged as browsers report it: `Sec-Fetch-Site` must be `same-origin` (or `none`, a user's own
 * navigation), then `Origin`, else `Referer`, must name this request's Host. A sibling deployment
 * (`<id>.<domain>`) is same-site but not same-origin, so it is refused too; `Origin: null` is refused.
 * Only a request with none of the three headers passes unjudged: browsers send them on every form
 * post, so it comes from a program, which no other site can drive. The scheme is not compared, so
 * the control plane works behind a TLS proxy.
 */
export function sentFromThisOrigin(ctx: Context): boolean {
  const fetchSite = ctx.get("sec-fetch-site");
  if (fetchSite && fetchSite !== "same-origin" && fetchSite !== "none") return false;
  const host = ctx.get("host").toLowerCase();
  const origin = ctx.get("origin");
  if (origin) return hostOf(origin) === host;
  const referer = ctx.get("referer");
  if (referer) return hostOf(referer) === host;
  return true;
}
