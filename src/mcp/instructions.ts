// What an agent reads once, at initialize, before it picks a tool.
export const SERVER_INSTRUCTIONS = `\
This is a localization service. It keeps localization projects (a source locale and target locales) in \
accounts, and around them organizations with their members and invitations, each account's voice (tone, \
formality, audience) and glossary (terms and their approved translations), account models and account \
tokens. The tools act with the permissions of the user who connected you.

Accounts: every account is either a user's personal account or an organization account, and tools name it by \
its handle (lowercase, such as "ada" or "acme"), never by an id. Call list_accounts first: it returns the \
handles you can use and your role on each (self, organization_admin, organization_member, or public_account \
for a public account you only read). Projects are named by their handle within an account.

Scopes: your access token holds scopes of the form object:action (project:read, project:write, \
members:write, ...). tools/list shows only the tools whose scope the token holds; calling a tool outside \
them is answered with HTTP 403 and an insufficient_scope challenge, so the user can grant more. A scope is a \
ceiling: your role on the account still decides, and something you may not see is reported as not found.

Voice, glossary, glossary settings, projects and organizations are edited by several people: their reads \
return an etag; pass it back as if_match when you save or update, and a write over someone else's newer \
change fails (status 412) instead of silently overwriting it (a list you send, such as a project's \
targetLocales, replaces the stored one whole). Voice and glossary keep every saved version. To change a few glossary terms, \
send only those: upsert_glossary_entries adds or replaces entries by term (with merge: true it changes \
only the fields you send, so adding one translation keeps the definition and the other translations) and \
remove_glossary_entries drops them (same if_match rule); search_glossary_entries finds entries a page at a time instead of reading the \
whole glossary.

An invitation to an organization is answered by the invited user with accept_invitation or \
decline_invitation and the invitation's token. delete_project cannot be undone: ask the user first.

A failed call comes back as a tool result with isError set and RFC 9457 problem details as text. When the \
arguments were wrong (status 400), its errors list carries JSON pointers (such as /arguments/handle) to each \
argument that was, with what it should be: correct them and call again. This server does not start \
translations or revisions and does not report per-file translation status.`;
