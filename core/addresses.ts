/** Where the engines are, read from their connection strings. */

/** host and port of the first host in a mongodb:// URI (undefined for mongodb+srv or when unparsable). */
export function mongoHostPort(uri: string): { host: string; port: number } | undefined {
  const m = /^mongodb:\/\/(?:[^@/]*@)?([^,/?]+)/.exec(uri);
  if (!m) return undefined;
  const hp = m[1];
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(hp);
  if (v6) return { host: v6[1], port: Number(v6[2] ?? 27017) };
  const [host, port] = hp.split(':');
  return { host, port: Number(port ?? 27017) };
}

export function brokerHostPort(broker: string): { host: string; port: number } {
  const i = broker.lastIndexOf(':');
  return i < 0
    ? { host: broker, port: 9092 }
    : { host: broker.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(broker.slice(i + 1)) };
}
