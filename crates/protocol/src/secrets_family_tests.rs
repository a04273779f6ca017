//! The families gitleaks' and detect-secrets' samples found wanting (Discord, SendGrid's
//! other shape, JWTs, GitLab's runner and agent tokens, npm's legacy tokens, Amazon Bedrock
//! keys, and the rest): for each, the shapes found and the near misses left alone, and a
//! name on one line with its value on the next. Tokens are built from parts, as in the parent
//! module.

use super::*;

/// `line` after `before`, as CC-07 scans an added line after the line above it.
#[track_caller]
fn found_after(before: &str, line: &str, id: &str) {
    let rules = rules();
    assert_eq!(rules.scan(line.as_bytes()), None, "alone: {line}");
    assert_eq!(
        rules
            .scan_after(before.as_bytes(), line.as_bytes())
            .map(|h| h.id),
        Some(id),
        "{before}⏎{line}"
    );
}

#[test]
fn amazon_bedrock_keys_long_and_short_term() {
    found(
        &format!("key = {}{}", "ABSK", r(132, B64)),
        "aws-bedrock-api-key",
    );
    found(
        &format!(
            "{}-api-key-{}{}",
            "bedrock",
            "YmVkcm9jay5hbWF6b25hd3MuY29t",
            r(200, B64)
        ),
        "aws-bedrock-short-term-key",
    );
    // Too short, or the base64 of another host.
    clean(&format!("ABSK{}", r(60, B64)));
    clean("bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29x");
    clean("bedrock-api-key-");
}

#[test]
fn gitlab_runner_agent_and_every_other_prefix() {
    let t = |prefix: &str, n: usize| format!("token: {prefix}-{}", r(n, B64URL));
    for (prefix, n) in [
        ("glrt", 20),
        ("glagent", 50),
        ("glffct", 20),
        ("glsoat", 20),
        ("glcbt", 20),
        ("glimt", 25),
        ("glptt", 40),
        ("gloas", 64),
        ("gldt", 20),
        ("glft", 20),
    ] {
        found(&t(prefix, n), "gitlab-token");
    }
    // A routable runner token: `glrt-t1_…​.` and nine more.
    found(
        &format!("{}-t1_{}.{}", "glrt", r(27, ALNUM), r(9, LOWERNUM)),
        "gitlab-token",
    );
    found(
        &format!("runner: {}{}", "GR1348941", r(20, ALNUM)),
        "gitlab-runner-registration-token",
    );
    found(
        &format!("Cookie: _gitlab_session={}", r(32, LOWERNUM)),
        "gitlab-session-cookie",
    );
    // The lengths that are exact: one too many is another string.
    clean(&format!("glimt-{}", r(34, B64URL)));
    clean(&format!("glptt-{}", r(43, B64URL)));
    clean(&format!("gloas-{}", r(70, B64URL)));
    clean(&format!("glagent-{}", r(20, B64URL)));
    // Low entropy, a placeholder.
    clean("GR134894112312312312312312312");
    clean("GR1348941XXXXXXXXXXXXXXXXXXXX");
}

#[test]
fn discord_bot_tokens_alone_and_credentials_by_name() {
    let bot = format!("M{}.{}.{}", r(23, ALNUM), r(6, B64URL), r(27, B64URL));
    found(&bot, "discord-bot-token");
    // The newer tokens' 38-character HMAC, and a token that starts inside a longer word.
    found(
        &format!("N{}.{}.{}", r(25, ALNUM), r(6, B64URL), r(38, B64URL)),
        "discord-bot-token",
    );
    found(&format!("x={bot}!"), "discord-bot-token");
    // Too short a part, a character no token has, or a first letter no id gives.
    clean(&format!(
        "M{}.{}.{}",
        r(22, ALNUM),
        r(5, B64URL),
        r(26, B64URL)
    ));
    clean(&format!(
        "M{}.{},{}",
        r(23, ALNUM),
        r(6, B64URL),
        r(27, B64URL)
    ));
    clean(&format!(
        "P{}.{}.{}",
        r(23, ALNUM),
        r(6, B64URL),
        r(27, B64URL)
    ));

    found(
        &format!("DISCORD_TOKEN={}", r(64, HEX)),
        "discord-credential",
    );
    found(
        &format!("discordClientSecret: \"{}\"", r(32, LOWERNUM)),
        "discord-credential",
    );
    found(
        &format!("discord_client_id = {}", r(18, DIGITS)),
        "discord-credential",
    );
    clean("discord=000000000000000000");
    // 64 hex digits with no Discord name near them: a hash.
    clean(&format!("digest = {}", r(64, HEX)));
}

#[test]
fn npm_legacy_tokens_in_an_npmrc() {
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        r(8, HEX),
        r(4, HEX),
        r(4, HEX),
        r(4, HEX),
        r(12, HEX)
    );
    for registry in ["registry.npmjs.org", "npm.pkg.github.com/acme"] {
        found(
            &format!("//{registry}/:_{}={uuid}", "authToken"),
            "npm-legacy-token",
        );
    }
    found(
        &format!("//registry.npmjs.org/:_authToken= {uuid}"),
        "npm-legacy-token",
    );
    // No registry before `/:`, or an environment variable.
    clean("//registry.npmjs.org/:_authToken=${NPM_TOKEN}");
}

#[test]
fn slack_telegram_square_atlassian_bitbucket_shapes() {
    // A user token inside a URL, and a legacy workspace token of mostly digits.
    found(
        &format!(
            "?t={}-{}-{}-{}-{}",
            "xoxe",
            r(13, DIGITS),
            r(13, DIGITS),
            r(13, DIGITS),
            r(32, HEX)
        ),
        "slack-token",
    );
    found(
        &format!(
            "{}-2-511111111-31111111111-3111111111111-{}",
            "xoxa",
            r(18, HEX)
        ),
        "slack-token",
    );
    // A configuration token's words are no token; nor is a short one.
    clean("xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere");
    clean("xoxb-12345-abcd234");

    found(
        &format!("bot: {}:{}{}", r(12, DIGITS), "A", r(34, B64URL)),
        "telegram-bot-token",
    );
    clean(&format!("bot{}:AA{}", r(9, DIGITS), r(33, B64URL)));
    clean(&format!("{}:A{}", r(4, DIGITS), r(34, B64URL)));
    clean(&format!("{}:A{}", r(17, DIGITS), r(34, B64URL)));

    found(
        &format!("square = {}-{}", "sq0csp", r(43, B64URL)),
        "square-token",
    );
    found(
        &format!("confluence_token = {}{}", r(20, LOWERNUM), r(4, HEX)),
        "atlassian-api-token-assignment",
    );
    clean("getPagesInConfluenceSpace,searchConfluenceUsingCql");
    found(
        &format!("var bitbucketToken string = \"{}\"", r(64, LOWERNUM)),
        "bitbucket-client-secret",
    );
}

#[test]
fn base64_encoded_jwts() {
    let header = b64url_encode(br#"{"alg":"HS256"}"#);
    let payload = b64url_encode(br#"{"iss":"joe"}"#);
    let jwt = format!("{header}.{payload}.{}", r(43, B64URL));
    let encoded = b64url_encode(jwt.as_bytes());
    found(&format!("token: {encoded}"), "jwt-base64");
    // The base64 of other text that starts as a JWT does.
    clean(&format!(
        "x = {}",
        b64url_encode(format!("eyJ{}", r(60, ALNUM)).as_bytes())
    ));
}

#[test]
fn assignments_in_every_shape_code_and_configuration_use() {
    let v = r(32, ALNUM);
    for line in [
        format!("$apiToken .= \"{v}\""),
        format!("System.setProperty(\"API_TOKEN\", \"{v}\")"),
        format!("api_TOKEN ?= \"{v}\""),
        format!("api_TOKEN ::= \"{v}\""),
        format!("var apiToken string = \"{v}\""),
        format!("apiToken := `{v}`"),
        format!("creds = {v}"),
        format!("private-key: {v}"),
        format!("{{\"config.ini\": \"API_TOKEN={v}\\nBACKUP_ENABLED=true\"}}"),
    ] {
        assert!(
            rules()
                .scan(line.as_bytes())
                .is_some_and(|h| h.id.starts_with("generic-secret")),
            "{line}"
        );
    }
    // What the name says is no secret: a file, a URL, a public or anti-forgery token, a Maven
    // coordinate, Docker's build secret, an empty `.env` entry above another.
    clean(&format!("TokenFile=\"{v}.cer\""));
    clean("access_token_url='https://github.com/login/oauth/access_token'");
    clean(&format!("publicToken = \"{v}\""));
    clean(&format!("csrf-token={v}"));
    clean("notes = \"Maven - io.jsonwebtoken:jjwt-jackson-0.11.2\"");
    clean("RUN --mount=type=secret,id=jfrog_secret make");
    assert_eq!(
        rules().scan_after(b"GITHUB_API_KEY=", b"DYNATRACE_API_KEY="),
        None
    );
}

#[test]
fn a_value_on_the_line_after_its_name() {
    // XML puts an element's text on its own line; a YAML block scalar, its value.
    found_after(
        "<bitbucketToken>",
        &format!("    {}", r(64, LOWERNUM)),
        "bitbucket-client-secret",
    );
    found_after(
        "<discordToken>",
        &format!("    {}", r(64, HEX)),
        "discord-credential",
    );
    found_after(
        "<apiToken>",
        &format!("    {}", r(32, ALNUM)),
        "generic-secret-assignment",
    );
    // A finding wholly on the line before is that line's own, not the next line's.
    let gh = format!("t = gh{}_{}", "p", r(36, ALNUM));
    assert_eq!(rules().scan_after(gh.as_bytes(), b"x = 1"), None);
    // Nothing on the line before with a keyword: the line alone decides.
    assert_eq!(
        rules().scan_after(b"<value>", format!("    {}", r(32, ALNUM)).as_bytes()),
        None
    );
}
