import { lookup as dnsLookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isForbiddenAddress } from '../../../core/outbound-http';

/**
 * HTTP agents for reaching a connection's source (an S3 endpoint, an HTTP origin) under the kernel's
 * outbound rules (docs/contracts.md): the address checked is the address connected to, because the
 * check sits in the agent's `lookup`. An allowed host (OUTBOUND_ALLOW_HOSTS) may be private; IP
 * literals never reach `lookup` and are checked by the URL shape rules beforehand.
 */
export function safeLookup(allowHosts: Set<string>): LookupFunction {
  return (host, options, cb) => {
    dnsLookup(host, { ...options, all: true }, (err, addresses) => {
      if (err) return (cb as (e: Error) => void)(err);
      const list = addresses as unknown as { address: string; family: number }[];
      if (!allowHosts.has(host.toLowerCase()) && list.some((a) => isForbiddenAddress(a.address))) {
        const e = Object.assign(new Error(`${host} resolves to a private or reserved address`), { code: 'EUNSAFEADDRESS' });
        return (cb as (e: Error) => void)(e);
      }
      if ((options as { all?: boolean }).all) return (cb as (e: null, a: typeof list) => void)(null, list);
      cb(null, list[0].address, list[0].family);
    });
  };
}

export function safeAgents(allowHosts: Set<string>): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  const lookup = safeLookup(allowHosts);
  return {
    httpAgent: new http.Agent({ keepAlive: true, maxSockets: 16, lookup }),
    httpsAgent: new https.Agent({ keepAlive: true, maxSockets: 16, lookup }),
  };
}
