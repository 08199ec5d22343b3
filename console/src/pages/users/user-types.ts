export interface UserItem {
  id: string;
  username: string;
  email: string;
  full_name: string;
  roles: string[];
  status: string;
  email_verified: boolean;
  last_login: string | null;
  login_count: number;
  created_at: string;
  updated_at: string;
}

export interface UserDetail extends UserItem {
  permissions?: string[];
  profile?: Record<string, unknown>;
  preferences?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  sessions?: {
    id: string;
    device: string;
    ip_address: string;
    location: string;
    last_activity: string;
    is_active: boolean;
  }[];
  api_keys?: {
    id: string;
    name: string;
    key_preview: string;
    last_used: string | null;
    is_active: boolean;
  }[];
}

/** The roles the platform defines (decisions §2). */
export const ROLES = ['user', 'moderator', 'admin'] as const;
