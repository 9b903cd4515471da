/**
 * Which arrays are plain: an array behind a proxy passes `Array.isArray`, yet may report one
 * `length` to a bound's look and another to the built-in after it (found by the review of the
 * array bounds), so every proxy capsule code makes is noted here. The bounds call only what they
 * captured before capsule code ran: a capsule that replaced `WeakSet.prototype.has` must not
 * make a proxy look plain.
 */
import { apply } from "./builtin-wrap.js";

const RealProxy = Proxy;
const isArray = Array.isArray;
const defineProperty = Object.defineProperty;
const weakSetHas = WeakSet.prototype.has;
const weakSetAdd = WeakSet.prototype.add;

/** Every proxy capsule code made. */
const proxies = new WeakSet<object>();

/** Whether `value` is a proxy capsule code made. */
export function isProxy(value: object): boolean {
  return apply(weakSetHas, proxies, [value]) as boolean;
}

/** Whether `value` is an array whose `length` is its own plain number (no proxy in front). */
export function isPlainArray(value: unknown): value is unknown[] {
  return isArray(value) && !isProxy(value);
}

/** `Proxy` and `Proxy.revocable` as before, noting each proxy made in {@link proxies}. */
export function trackProxies(): void {
  const makeProxy = function (this: unknown, target: object, handler: ProxyHandler<object>): object {
    if (!new.target) throw new TypeError("Constructor Proxy requires 'new'");
    const made = new RealProxy(target, handler);
    apply(weakSetAdd, proxies, [made]);
    return made;
  };
  // Bound: constructible, and like the real one without a `prototype` property.
  const tracked = makeProxy.bind(undefined) as unknown as ProxyConstructor;
  defineProperty(tracked, "name", { value: "Proxy" });
  defineProperty(tracked, "revocable", {
    value: {
      revocable(target: object, handler: ProxyHandler<object>) {
        const made = RealProxy.revocable(target, handler);
        apply(weakSetAdd, proxies, [made.proxy]);
        return made;
      },
    }.revocable,
    writable: true,
    configurable: true,
  });
  defineProperty(globalThis, "Proxy", { value: tracked, writable: true, configurable: true });
}
