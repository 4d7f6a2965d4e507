import { SMTPServer } from 'smtp-server';

/**
 * The SMTP sink stand-in (docs/contracts.md): a real SMTP server on loopback that accepts mail, answers
 * 4xx to a recipient whose local part starts with `defer+` the first time it sees that address (so
 * a retry is delivered), and 5xx to `bounce+…` recipients. It keeps what it accepted in memory for
 * tests and the benchmark; nothing is relayed anywhere.
 */
export interface SinkMessage {
  from: string;
  to: string[];
  bytes: number;
  messageId: string | null;
  at: number;
  /** The whole message as received, only when the sink was started with `keepRaw` (tests). */
  raw?: string;
}

export interface SmtpSink {
  url: string;
  readonly received: SinkMessage[];
  stop(): Promise<void>;
}

const localPart = (address: string) => address.split('@')[0]?.toLowerCase() ?? '';

export async function startSmtpSink(opts: { host?: string; port?: number; keepRaw?: boolean } = {}): Promise<SmtpSink> {
  const host = opts.host ?? '127.0.0.1';
  const received: SinkMessage[] = [];
  const deferredOnce = new Set<string>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 10 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      const rcpt = address.address.toLowerCase();
      const local = localPart(rcpt);
      if (local.startsWith('bounce+')) {
        const err = Object.assign(new Error('5.1.1 mailbox does not exist'), { responseCode: 550 });
        return callback(err);
      }
      if (local.startsWith('defer+') && !deferredOnce.has(rcpt)) {
        deferredOnce.add(rcpt);
        const err = Object.assign(new Error('4.2.1 mailbox busy, try again later'), { responseCode: 451 });
        return callback(err);
      }
      return callback();
    },
    onData(stream, session, callback) {
      let bytes = 0;
      let head = '';
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (head.length < 8192) head += chunk.toString('utf8');
        if (opts.keepRaw) chunks.push(chunk);
      });
      stream.on('end', () => {
        const id = /^message-id:\s*(.+)$/im.exec(head)?.[1]?.trim() ?? null;
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          bytes,
          messageId: id,
          at: Date.now(),
          ...(opts.keepRaw ? { raw: Buffer.concat(chunks).toString('utf8') } : {}),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `smtp://${host.includes(':') ? `[${host}]` : host}:${port}`,
    received,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}
