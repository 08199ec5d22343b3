import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  body: string;
}

/** `=\r\n` soft breaks and `=XX` escapes of quoted-printable bodies. */
function decodeQuotedPrintable(text: string): string {
  const bytes = text
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/**
 * A real SMTP server on 127.0.0.1 (port 0) that keeps what it receives. `rejectRecipients` makes it refuse
 * every recipient, as a misconfigured relay would; `hold` keeps each message's answer until it resolves, as a
 * slow relay would.
 */
export async function startSmtpSink(
  options: { rejectRecipients?: boolean; hold?: () => Promise<void> } = {},
) {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (options.rejectRecipients) callback(new Error(`550 mailbox ${address.address} unavailable`));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const split = raw.indexOf('\r\n\r\n');
        const head = raw.slice(0, split);
        const rawBody = raw.slice(split + 4);
        const subject = /^Subject: (.*)$/im.exec(head)?.[1]?.trim() ?? '';
        const qp = /Content-Transfer-Encoding: quoted-printable/i.test(head);
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          subject,
          body: qp ? decodeQuotedPrintable(rawBody) : rawBody,
        });
        if (options.hold) void options.hold().then(() => callback());
        else callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** Waits (briefly) for a message to the address to arrive. */
    async waitFor(to: string, timeoutMs = 5000): Promise<ReceivedMail> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const mail = received.find((m) => m.to.includes(to));
        if (mail) return mail;
        if (Date.now() > deadline) throw new Error(`no e-mail to ${to} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
