import type { MailMessage } from './mail-message.js';

interface Recipient {
  username: string;
  email: string;
  full_name: string;
}

const greeting = (u: Recipient) => `Hello ${u.full_name || u.username},`;

/** The welcome e-mail of a new account (`send_welcome_email`). It never carries the password. */
export function welcomeMail(u: Recipient, passwordChangeRequired: boolean): MailMessage {
  return {
    kind: 'welcome',
    to: u.email,
    subject: 'Welcome to the platform',
    text: [
      greeting(u),
      '',
      `An account has been created for you. Your username is: ${u.username}`,
      'Your administrator will give you your initial password.',
      ...(passwordChangeRequired
        ? ['You will be asked to choose a new password when you first log in.']
        : []),
    ].join('\n'),
  };
}

/** The suspension notice (`notify_user`). */
export function suspensionMail(u: Recipient, reason: string, until: string | null): MailMessage {
  return {
    kind: 'suspension',
    to: u.email,
    subject: 'Your account has been suspended',
    text: [
      greeting(u),
      '',
      'Your account has been suspended by an administrator.',
      `Reason: ${reason || 'not given'}`,
      until ? `The suspension ends on ${until}.` : 'The suspension lasts until an administrator lifts it.',
      'While it lasts you cannot log in, and your API keys do not work.',
    ].join('\n'),
  };
}

/**
 * The password-reset e-mail (`send_email`). The temporary password is in the SMTP text only; the log form
 * (no SMTP configured) says that it was withheld, because log lines must never hold a password.
 */
export function passwordResetMail(u: Recipient, temporaryPassword: string, mustChange: boolean): MailMessage {
  const head = [greeting(u), '', 'An administrator has reset the password of your account.'];
  const tail = [
    mustChange ? 'You will be asked to choose a new password when you log in.' : '',
    'All your sessions have been signed out.',
  ].filter(Boolean);
  return {
    kind: 'password_reset',
    to: u.email,
    subject: 'Your password has been reset',
    text: [...head, `Your temporary password is: ${temporaryPassword}`, ...tail].join('\n'),
    loggedText: [
      ...head,
      'Your temporary password: [withheld from the log; ask your administrator]',
      ...tail,
    ].join('\n'),
  };
}
