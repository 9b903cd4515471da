import type { HostBus, IfFree } from "./kv.js";

/** The bus of a store no other process opens: locks need no one else, broadcasts reach no one. */
export const LOCAL_BUS: HostBus = {
  lockAcrossProcesses: <T>(_name: string, work: () => Promise<T>): Promise<T> => work(),
  lockAcrossProcessesIfFree: async <T>(_name: string, work: () => Promise<T>): Promise<IfFree<T>> => ({
    ran: true,
    value: await work(),
  }),
  inOwnerTurn: <T>(_owner: string, work: () => Promise<T>): Promise<T> => work(),
  broadcast: async () => {},
  onBroadcast: () => () => {},
};
