import { type TString, Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';
import { ALL_PERMISSIONS } from './roles.js';

export const TokenPair = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the access token expires' }),
  refresh_token: Type.String({ description: 'Opaque; rotated on every use' }),
  refresh_expires_in: Type.Integer(),
  user: Type.Object({
    id: Type.String(),
    username: Type.String(),
    roles: Type.Array(Type.String()),
    permissions: Type.Array(Type.String()),
  }),
  password_change_required: Type.Boolean(),
});

export const LoginBody = Type.Object(
  {
    // No control characters: no account name has them, and PostgreSQL cannot even compare a NUL.
    username: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001f]+$' })),
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001f]+$' })),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false, examples: [{ username: 'admin', password: 'correct horse battery' }] },
);

export const RefreshBody = Type.Object(
  { refresh_token: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false },
);

export const ChangePasswordBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: 1024 }),
    new_password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

export const Me = Type.Object({
  id: Type.String(),
  username: Type.String(),
  email: Type.String(),
  full_name: Type.String(),
  roles: Type.Array(Type.String()),
  permissions: Type.Array(Type.String()),
  status: Type.String(),
  auth_method: Type.Union([Type.Literal('jwt'), Type.Literal('api_key')]),
  session_id: Type.Union([Type.String(), Type.Null()]),
  api_key_id: Type.Union([Type.String(), Type.Null()]),
  password_change_required: Type.Boolean(),
  last_login: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
});

export const SessionView = Type.Object({
  id: Type.String(),
  device: Type.String(),
  ip_address: Type.String(),
  location: Type.String(),
  created_at: Timestamp,
  last_activity: Timestamp,
  expires_at: Timestamp,
  is_active: Type.Boolean(),
  is_current: Type.Boolean(),
});

export const ApiKeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key_preview: Type.String({ description: 'Masked: only the last 4 characters are visible' }),
  scopes: Type.Array(Type.String()),
  created_at: Timestamp,
  expires_at: Type.Union([Timestamp, Type.Null()]),
  last_used: Type.Union([Timestamp, Type.Null()]),
  usage_count: Type.Integer(),
  is_active: Type.Boolean(),
});

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    scopes: Type.Optional(
      Type.Array(Type.String({ enum: [...ALL_PERMISSIONS, '*'] }), {
        maxItems: 64,
        uniqueItems: true,
        description:
          "A subset of the owner's permissions (`*`: all of them); omitted or empty: all of the owner's permissions",
      }),
    ),
    expires_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  },
  {
    additionalProperties: false,
    examples: [{ name: 'ci-deployer', scopes: ['read:system', 'events:emit'] }],
  },
);

/** Ids are `prefix_` + base32 (`ses_…`, `key_…`); anything else can only be a 404 or a typo. */
export const IdParams = <K extends string>(name: K) =>
  Type.Object({
    [name]: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }),
  } as Record<K, TString>);
