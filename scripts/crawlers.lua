-- wrk's request mix for the ledger's kill -9 soak (scripts/soak-ledger.sh):
-- every request claims a crawler, so every answered request is one the
-- ledger must count; paths cycle through allowed and disallowed pages.
local agents = {
  "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
  "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
  "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
}
local paths = { "/page.html", "/shop/item?id=42", "/cart", "/search?q=shoes", "/private/x" }
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", paths[(n % #paths) + 1], { ["Host"] = "shop.test", ["User-Agent"] = agents[(n % #agents) + 1] })
end
