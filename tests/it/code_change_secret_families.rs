//! CC-07 through the binary, family by family, for the families measured short on gitleaks'
//! and detect-secrets' own samples (and the others the rules were changed for): a task adds
//! lines to `src/app.py`, `verify --protocol code-change --write` judges it, and CC-07 FAILs
//! with `src/app.py:LINE: RULE` for each secret (the secret itself nowhere in what the referee
//! prints or writes), and PASSes on the near misses. Tokens are built from parts and
//! pseudo-random characters, so none sits in the repository in one piece.

use std::collections::BTreeMap;
use std::fs;

use crate::code_change::{git_workspace, record, verdict, APP, ORIGINAL};
use crate::code_change_secrets::{assert_absent, cc07, files, token, ALNUM, B64};
use crate::util::Output;
use crate::watch::run;

const HEX: &[u8] = b"0123456789abcdef";
const LOWERNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const DIGITS: &[u8] = b"0123456789";

/// CC-07 on `src/app.py` grown by `added` (its lines start at line 3).
struct Judged {
    status: String,
    details: Vec<String>,
    code: i32,
}

/// Judges an attempt that adds `added` (each line ending in a newline) after `ORIGINAL`, and
/// checks that none of `secrets` appears in the referee's output or files.
fn judge(added: &str, secrets: &[&str]) -> Judged {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), format!("{ORIGINAL}{added}")).expect("write");
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
    ]);
    assert_absent(secrets, "verify's output", stdout.as_bytes());
    assert_absent(secrets, "verify's errors", stderr.as_bytes());
    for (path, bytes) in files(&ws.join(".referee")) {
        assert_absent(secrets, &path, &bytes);
    }
    let r = cc07(&verdict(&ws, "t1"));
    let details = match &r["evidence"]["details"] {
        serde_json::Value::Array(a) => a
            .iter()
            .map(|d| d.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    Judged {
        status: r["status"].as_str().unwrap_or_default().to_string(),
        details,
        code,
    }
}

/// The secrets on the added lines are each named by line and rule, and nothing else is.
#[track_caller]
fn fails_with(added: &str, secrets: &[&str], expected: &[&str]) {
    let j = judge(added, secrets);
    assert_eq!(j.status, "FAIL", "{:?}", j.details);
    assert_eq!(j.code, 1);
    assert_eq!(j.details, expected, "{added}");
}

/// The near misses are no finding.
#[track_caller]
fn passes(added: &str) {
    let j = judge(added, &[]);
    assert_eq!(j.status, "PASS", "{added}: {:?}", j.details);
}

#[test]
fn discord_bot_tokens_and_credentials_by_name() {
    let bot = token(&["M"], 23, ALNUM, 11)
        + &token(&["."], 6, B64URL, 12)
        + &token(&["."], 27, B64URL, 13);
    let api = token(&[], 64, HEX, 14);
    fails_with(
        &format!("BOT = \"{bot}\"\n<discordToken>\n    {api}\n</discordToken>\n"),
        &[&bot, &api],
        &[
            "src/app.py:3: Discord bot token",
            // The value's line, though its name is on the line above.
            "src/app.py:5: Discord token or client secret",
        ],
    );
    passes(&format!(
        "BOT = \"{}\"\ndigest = \"{api}\"\n",
        token(&["P"], 23, ALNUM, 11)
            + &token(&["."], 6, B64URL, 12)
            + &token(&["."], 27, B64URL, 13)
    ));
}

#[test]
fn sendgrid_keys_in_both_shapes() {
    let key = token(&["SG", "."], 22, B64URL, 21) + &token(&["."], 43, B64URL, 22);
    let long = token(&["SG", "."], 66, LOWERNUM, 23);
    fails_with(
        &format!("KEY = \"{key}\"\nsendgrid_token: {long}\n"),
        &[&key, &long],
        &[
            "src/app.py:3: SendGrid API key",
            "src/app.py:4: SendGrid API key",
        ],
    );
    passes(&format!("KEY = \"A{}\"\n", &key[1..]));
}

#[test]
fn jwts_mangled_or_unsigned_and_base64_encoded() {
    // The header is no JSON (gitleaks' own sample is so), the token still is one.
    let jwt = token(&["ey", "J"], 30, ALNUM, 31) + &token(&[".ey", "J"], 40, ALNUM, 32);
    let signed = format!("{jwt}.{}", token(&[], 43, B64URL, 33));
    let encoded = b64(signed.as_bytes());
    fails_with(
        &format!("AUTH = \"Bearer {signed}\"\nT = \"{jwt}\"\nX = \"{encoded}\"\n"),
        &[&signed, &encoded],
        &[
            "src/app.py:3: JSON Web Token",
            "src/app.py:4: JSON Web Token",
            "src/app.py:5: JSON Web Token (base64)",
        ],
    );
    passes("SHAPE = \"eyJAAAA.eyJBBB\"\n");
}

#[test]
fn gitlab_runner_agent_and_registration_tokens() {
    let runner = token(&["gl", "rt-"], 20, B64URL, 41);
    let agent = token(&["gl", "agent-"], 50, B64URL, 42);
    let registration = token(&["GR13", "48941"], 20, ALNUM, 43);
    fails_with(
        &format!("RUNNER = \"{runner}\"\nAGENT = \"{agent}\"\nREG = \"{registration}\"\n"),
        &[&runner, &agent, &registration],
        &[
            "src/app.py:3: GitLab token",
            "src/app.py:4: GitLab token",
            "src/app.py:5: GitLab runner registration token",
        ],
    );
    // One character short of an agent token, a placeholder registration token.
    passes(&format!(
        "AGENT = \"{}\"\nREG = \"GR1348941XXXXXXXXXXXXXXXXXXXX\"\n",
        &agent[..agent.len() - 30]
    ));
}

#[test]
fn npm_legacy_tokens_in_an_npmrc() {
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        token(&[], 8, HEX, 51),
        token(&[], 4, HEX, 52),
        token(&[], 4, HEX, 53),
        token(&[], 4, HEX, 54),
        token(&[], 12, HEX, 55)
    );
    fails_with(
        &format!(
            "NPMRC = \"//registry.npmjs.org/:_auth{}={uuid}\"\n",
            "Token"
        ),
        &[&uuid],
        &["src/app.py:3: npm token"],
    );
    passes("NPMRC = \"//registry.npmjs.org/:_authToken=${NPM_TOKEN}\"\n");
}

#[test]
fn amazon_bedrock_keys() {
    let long = token(&["AB", "SK"], 132, B64, 61);
    let short = token(
        &["bedrock-api-key-", "YmVkcm9jay5hbWF6b25hd3MuY29t"],
        120,
        B64URL,
        62,
    );
    fails_with(
        &format!("LONG = \"{long}\"\nSHORT = \"{short}\"\n"),
        &[&long, &short],
        &[
            "src/app.py:3: Amazon Bedrock API key",
            "src/app.py:4: Amazon Bedrock API key (short-term)",
        ],
    );
    passes(&format!("LONG = \"{}\"\n", &long[..64]));
}

#[test]
fn slack_telegram_stripe_and_anthropic_shapes() {
    let slack = token(&["xo", "xe-"], 13, DIGITS, 71)
        + &token(&["-"], 13, DIGITS, 72)
        + &token(&["-"], 13, DIGITS, 73)
        + &token(&["-"], 32, HEX, 74);
    let telegram = token(&[], 12, DIGITS, 75) + &token(&[":", "A"], 34, B64URL, 76);
    let stripe = token(&["sk", "_test_"], 24, ALNUM, 77);
    let anthropic = token(&["sk-", "ant-", "api03-"], 93, B64URL, 78) + "AA";
    fails_with(
        &format!("S = \"{slack}\"\nT = \"{telegram}\"\nK = \"{stripe}\"\nA = \"{anthropic}\"\n"),
        &[&slack, &telegram, &stripe, &anthropic],
        &[
            "src/app.py:3: Slack token",
            "src/app.py:4: Telegram bot token",
            "src/app.py:5: Stripe secret key",
            "src/app.py:6: Anthropic API key",
        ],
    );
    passes(&format!(
        "S = \"xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere\"\nT = \"bot{telegram}\"\nK = \"pk_live_{}\"\n",
        &stripe[8..]
    ));
}

#[test]
fn atlassian_bitbucket_openai_square_and_google_shapes() {
    let jira = token(&[], 20, LOWERNUM, 101) + &token(&[], 4, HEX, 102);
    let bitbucket = token(&[], 64, LOWERNUM, 103);
    let openai =
        token(&["sk-", "proj-"], 58, B64URL, 104) + "T3Blbk" + &token(&["FJ"], 58, B64URL, 105);
    let square = token(&["sq0", "csp-"], 43, B64URL, 106);
    fails_with(
        &format!(
            "JIRA_API_TOKEN={jira}\nvar bitbucketToken string = \"{bitbucket}\"\nO = \"{openai}\"\nQ = \"{square}\"\n"
        ),
        &[&jira, &bitbucket, &openai, &square],
        &[
            "src/app.py:3: Atlassian API token",
            "src/app.py:4: Bitbucket client secret",
            "src/app.py:5: OpenAI API key",
            "src/app.py:6: Square token",
        ],
    );
    // Two method names after a Confluence name; a key Google's own clients publish (allowed as
    // gitleaks allows it).
    passes(&format!(
        "M = [getPagesInConfluenceSpace,searchConfluenceUsingCql]\nG = \"{}{}\"\n",
        "AIzaSyAnLA7NfeLquW1tJ", "Fpx_eQCxoX-oo6YyIs"
    ));
}

#[test]
fn secret_assignments_in_every_shape_and_across_two_lines() {
    let v = token(&[], 32, ALNUM, 81);
    let w = token(&[], 30, ALNUM, 82);
    fails_with(
        &format!("$apiToken .= \"{v}\";\ncreds = {w}\n<apiToken>\n    {v}\n</apiToken>\n"),
        &[&v, &w],
        &[
            "src/app.py:3: secret assignment",
            "src/app.py:4: secret assignment",
            "src/app.py:6: secret assignment",
        ],
    );
    // A name that says what the value is (a file, a hash, a public token), or an empty entry.
    passes(&format!(
        "TokenFile = \"{v}.cer\"\ntoken_sha256 = \"{}\"\npublicToken = \"{w}\"\nGITHUB_API_KEY=\nDYNATRACE_API_KEY=\n",
        token(&[], 64, HEX, 83)
    ));
}

/// Standard base64 with padding, as a JWT is encoded again in configuration.
fn b64(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let mut acc = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            acc |= u32::from(b) << (16 - 8 * i);
        }
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[((acc >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn a_value_added_under_a_name_the_baseline_already_has() {
    // The baseline holds `<apiToken>` and `</apiToken>`; the attempt adds only the value
    // between them: the line above it is no added line, and still names it.
    let (_root, ws, _logs) = git_workspace();
    let base = format!("{ORIGINAL}<apiToken>\n</apiToken>\n");
    fs::write(ws.join(APP), &base).expect("write");
    crate::code_change::git(&ws, &["commit", "-qam", "the element"]);
    let v = token(&[], 32, ALNUM, 91);
    fs::write(
        ws.join(APP),
        format!("{ORIGINAL}<apiToken>\n    {v}\n</apiToken>\n"),
    )
    .expect("write");
    record(
        &ws,
        "t1",
        1,
        &[APP],
        &BTreeMap::from([(APP, base.as_str())]),
    );
    let Output { code, stdout, .. } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert_absent(&[&v], "verify's output", stdout.as_bytes());
    let r = cc07(&verdict(&ws, "t1"));
    assert_eq!(r["status"], "FAIL", "{r}");
    assert_eq!(
        r["evidence"]["details"],
        serde_json::json!(["src/app.py:4: secret assignment"]),
        "{r}"
    );
}
