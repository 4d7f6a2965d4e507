import { Socket } from 'node:net';
import type { Readable } from 'node:stream';

/** What a malware scan found. */
export type ScanVerdict = 'clean' | 'infected';

export interface Scanner {
  readonly name: string;
  /** Scans the whole file: `head` holds its first bytes, `open` streams all of it. */
  scan(head: Buffer, size: number, open: () => Readable): Promise<ScanVerdict>;
}

/** The EICAR anti-malware test string (it must start the file; trailing whitespace is allowed). */
export const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
/** The EICAR test file is at most 128 bytes long. */
const EICAR_MAX_BYTES = 128;

/**
 * The default scanner: recognises the EICAR test file (so quarantine can be exercised end to end)
 * and nothing else. Production sets ASSETS_CLAMD_ADDRESS to use clamd instead.
 */
export class EicarScanner implements Scanner {
  readonly name = 'eicar';

  async scan(head: Buffer, size: number): Promise<ScanVerdict> {
    if (size > EICAR_MAX_BYTES) return 'clean';
    const text = head.toString('latin1');
    // eslint-disable-next-line no-control-regex -- EICAR allows a trailing DOS end-of-file byte
    return text.startsWith(EICAR) && /^[\s\x1a]*$/.test(text.slice(EICAR.length)) ? 'infected' : 'clean';
  }
}

/**
 * clamd over TCP with the INSTREAM command: 4-byte big-endian chunk lengths, a zero-length chunk
 * ends the stream; the answer is `stream: OK` or `stream: <name> FOUND`.
 */
export class ClamdScanner implements Scanner {
  readonly name = 'clamd';

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  async scan(_head: Buffer, _size: number, open: () => Readable): Promise<ScanVerdict> {
    const socket = new Socket();
    const reply = new Promise<string>((resolve, reject) => {
      const parts: Buffer[] = [];
      socket.on('data', (d: Buffer) => parts.push(d));
      socket.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
      socket.on('error', reject);
    });
    await new Promise<void>((resolve, reject) => socket.connect(this.port, this.host, resolve).once('error', reject));
    socket.write('zINSTREAM\0');
    for await (const chunk of open()) {
      const len = Buffer.alloc(4);
      len.writeUInt32BE((chunk as Buffer).length);
      socket.write(len);
      socket.write(chunk as Buffer);
    }
    socket.end(Buffer.alloc(4));
    const answer = await reply;
    if (/FOUND/.test(answer)) return 'infected';
    if (/OK/.test(answer)) return 'clean';
    throw new Error(`clamd answered: ${answer.trim()}`);
  }
}
