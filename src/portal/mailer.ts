/**
 * The portal's mail: through SMTP (nodemailer) when SMTP_URL is set, otherwise into a local outbox,
 * one RFC 822 file per message under DATA_DIR/portal-outbox (directory 0700, files 0600). Messages
 * carry sign-in links, so neither path ever logs their content.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Where messages go, for the operator's logs (never a password). */
  readonly describe: string;
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export function outboxDir(dataDir: string): string {
  return path.join(dataDir, 'portal-outbox');
}

export function createOutboxMailer(dir: string, from: string): Mailer {
  return {
    describe: `outbox ${dir}`,
    async send(message) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const file = path.join(dir, `${stamp}-${randomBytes(4).toString('hex')}.eml`);
      const body = [
        `From: ${from}`,
        `To: ${message.to}`,
        `Subject: ${message.subject}`,
        `Date: ${new Date().toUTCString()}`,
        'Content-Type: text/plain; charset=utf-8',
        '',
        message.text,
        '',
      ].join('\r\n');
      writeFileSync(file, body, { mode: 0o600, flag: 'wx' });
      chmodSync(file, 0o600); // the umask may have narrowed it further, never widened; be exact
    },
    close() {},
  };
}

/** Loads nodemailer (~50 modules) only here: with the outbox, the service never loads it (#13). */
export async function createSmtpMailer(smtpUrl: string, from: string): Promise<Mailer> {
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport(smtpUrl);
  const host = new URL(smtpUrl).host;
  return {
    describe: `smtp ${host}`,
    async send(message) {
      await transport.sendMail({ from, ...message });
    },
    close() {
      transport.close();
    },
  };
}

export async function mailerFromConfig(config: {
  SMTP_URL: string | undefined;
  PORTAL_MAIL_FROM: string;
  DATA_DIR: string;
}): Promise<Mailer> {
  return config.SMTP_URL
    ? createSmtpMailer(config.SMTP_URL, config.PORTAL_MAIL_FROM)
    : createOutboxMailer(outboxDir(config.DATA_DIR), config.PORTAL_MAIL_FROM);
}
