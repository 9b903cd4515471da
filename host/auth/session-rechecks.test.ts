/** Open sessions read again after other hosts' commits: deployments take turns, each gate once, two at a time. */
import { expect, it } from "vitest";
import { deferred } from "../../test/helpers/deferred.js";
import { SessionGate } from "./open-sessions.js";
import { SessionRechecks } from "./session-rechecks.js";

it("reads each waiting gate once, two at a time, deployments taking turns", async () => {
  const order: string[] = [];
  const gates = new Map<SessionGate, ReturnType<typeof deferred<void>>>();
  const rechecks = new SessionRechecks((gate) => {
    order.push(gate.sessionId);
    const done = deferred();
    gates.set(gate, done);
    return done.promise;
  });
  const gate = (id: string) => new SessionGate(id, id);
  const busy = ["busy/1", "busy/2", "busy/3", "busy/4"].map(gate);
  const quiet = gate("quiet/1");
  for (const each of busy) rechecks.add("busy", each);
  // Named again while it waits: read once.
  rechecks.add("busy", busy[2] as SessionGate);
  rechecks.add("quiet", quiet);
  expect(order).toEqual(["busy/1", "busy/2"]);
  // As reads end, the deployments take turns: the quiet one's gate waits behind one of the busy
  // one's, not all of them.
  for (let round = 0; round < 4; round++) {
    for (const done of gates.values()) done.resolve();
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(order).toEqual(["busy/1", "busy/2", "busy/3", "quiet/1", "busy/4"]);
});
