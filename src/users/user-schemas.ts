import { Type } from '@sinclair/typebox';
import { PageQuery, Timestamp } from '../http/envelope.js';

export const RoleName = Type.Union([Type.Literal('user'), Type.Literal('moderator'), Type.Literal('admin')]);
const roleList = (options: { default?: string[] } = {}) =>
  Type.Array(RoleName, { minItems: 1, maxItems: 3, uniqueItems: true, ...options });
const Username = Type.String({
  minLength: 3,
  maxLength: 64,
  pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$',
  description: '3–64 characters: letters, digits, `_`, `.`, `-`; starts with a letter or digit',
});
const Email = Type.String({ format: 'email', maxLength: 254 });
const FullName = Type.String({ maxLength: 200 });
const Password = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: 'At least `auth.password_min_length` characters (10 by default)',
});
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

export const UserStatus = Type.Union([
  Type.Literal('active'),
  Type.Literal('inactive'),
  Type.Literal('suspended'),
]);

export const UserListItem = Type.Object({
  id: Type.String(),
  username: Type.String(),
  email: Type.String(),
  full_name: Type.String(),
  roles: Type.Array(Type.String()),
  status: UserStatus,
  email_verified: Type.Boolean(),
  last_login: NullableTimestamp,
  login_count: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const Profile = Type.Object({
  avatar_url: Type.String(),
  bio: Type.String(),
  location: Type.String(),
});

export const Preferences = Type.Object({
  theme: Type.String(),
  language: Type.String(),
  notifications: Type.Boolean(),
});

export const UserSessionView = Type.Object({
  id: Type.String(),
  device: Type.String(),
  ip_address: Type.String(),
  location: Type.String(),
  last_activity: Timestamp,
  is_active: Type.Boolean(),
});

export const UserApiKeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key_preview: Type.String({ description: 'Masked: only the last 4 characters are visible' }),
  last_used: NullableTimestamp,
  is_active: Type.Boolean(),
});

export const UserMetadata = Type.Object({
  last_login: NullableTimestamp,
  login_count: Type.Integer(),
  failed_login_attempts: Type.Integer({ description: 'Failed logins since the last successful one' }),
  locked_until: Type.Union([Timestamp, Type.Null()], {
    description: 'Set while the account is locked after repeated failed logins',
  }),
  last_password_change: NullableTimestamp,
  password_change_required: Type.Boolean(),
  suspended_until: Type.Union([Timestamp, Type.Null()], {
    description: 'When a suspension ends by itself; null for an indefinite one or when not suspended',
  }),
  suspension_reason: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const UserDetail = Type.Object({
  ...UserListItem.properties,
  permissions: Type.Array(Type.String(), { description: 'Effective permissions, `action:scope`' }),
  profile: Profile,
  preferences: Preferences,
  metadata: UserMetadata,
  sessions: Type.Array(UserSessionView),
  api_keys: Type.Array(UserApiKeyView),
});

/** The resource API's view: sessions and API keys only for the user themselves and user administrators. */
export const ResourceUser = Type.Object({
  ...UserListItem.properties,
  permissions: UserDetail.properties.permissions,
  profile: Profile,
  preferences: Preferences,
  metadata: UserMetadata,
  sessions: Type.Optional(Type.Array(UserSessionView)),
  api_keys: Type.Optional(Type.Array(UserApiKeyView)),
});

export const UserListQuery = Type.Object(
  {
    ...PageQuery,
    search: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'Matches username, e-mail or full name (case-insensitive)',
      }),
    ),
    role: Type.Optional(RoleName),
    status: Type.Optional(UserStatus),
    created_after: Type.Optional(
      Type.Union([Timestamp, Type.String({ format: 'date' })], {
        description: 'ISO 8601 date or date-time; users created at or after it',
      }),
    ),
    sort: Type.Optional(
      Type.Union(
        [
          Type.Literal('username'),
          Type.Literal('email'),
          Type.Literal('created_at'),
          Type.Literal('last_login'),
        ],
        { default: 'created_at' },
      ),
    ),
    order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  },
  { additionalProperties: false },
);

export const CreateUserBody = Type.Object(
  {
    username: Username,
    email: Email,
    password: Password,
    full_name: Type.Optional(FullName),
    roles: Type.Optional(roleList({ default: ['user'] })),
    send_welcome_email: Type.Optional(Type.Boolean({ default: false })),
    force_password_change: Type.Optional(Type.Boolean({ default: false })),
  },
  {
    additionalProperties: false,
    examples: [
      {
        username: 'jdoe',
        email: 'jdoe@example.com',
        password: 'a long passphrase',
        full_name: 'Jane Doe',
        roles: ['user'],
        send_welcome_email: true,
        force_password_change: true,
      },
    ],
  },
);

const ProfilePatch = Type.Object(
  {
    avatar_url: Type.Optional(Type.String({ maxLength: 2048 })),
    bio: Type.Optional(Type.String({ maxLength: 2000 })),
    location: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);

const PreferencesPatch = Type.Object(
  {
    theme: Type.Optional(Type.String({ maxLength: 32 })),
    language: Type.Optional(Type.String({ maxLength: 16 })),
    notifications: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const UpdateUserBody = Type.Object(
  {
    email: Type.Optional(Email),
    full_name: Type.Optional(FullName),
    roles: Type.Optional(roleList()),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('inactive')], {
        description: 'Suspension has its own operation; `active` also lifts a suspension',
      }),
    ),
    email_verified: Type.Optional(Type.Boolean()),
    profile: Type.Optional(ProfilePatch),
    preferences: Type.Optional(PreferencesPatch),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ full_name: 'Jane Q. Doe', roles: ['user', 'moderator'], status: 'active' }],
  },
);

export const SuspendBody = Type.Object(
  {
    reason: Type.Optional(Type.String({ maxLength: 1000, default: '' })),
    duration_days: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3650,
        description: 'Days until the suspension ends by itself; 0 or absent: until lifted',
      }),
    ),
    notify_user: Type.Optional(Type.Boolean({ default: false })),
  },
  {
    additionalProperties: false,
    examples: [{ reason: 'Terms of service violation', duration_days: 7, notify_user: true }],
  },
);

export const ResetPasswordBody = Type.Object(
  {
    temporary_password: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'When absent a random one is generated and returned once in this response',
      }),
    ),
    force_change_on_login: Type.Optional(Type.Boolean({ default: true })),
    send_email: Type.Optional(Type.Boolean({ default: false })),
  },
  {
    additionalProperties: false,
    examples: [{ temporary_password: 'TempPass-2026!', force_change_on_login: true, send_email: true }],
  },
);

export const EmailDelivery = Type.Union(
  [Type.Literal('sent'), Type.Literal('logged'), Type.Literal('failed'), Type.Literal('not_requested')],
  {
    description:
      'sent: accepted by the SMTP server; logged: no SMTP configured, written to the log; failed: SMTP refused or unreachable',
  },
);

export const UserIdParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 64 }) });
