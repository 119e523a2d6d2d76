# Vitola: `make run` starts the whole platform on the embedded default; `make test`
# runs every test. Both install what they need, at pinned versions.

GO        ?= go
TOOLS     := $(CURDIR)/.cache/tools
WGC       := $(TOOLS)/node_modules/.bin/wgc
DATA      ?= ./data

# stripe-mock serves the Stripe API on loopback for the stripe gateway's tests.
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK         := $(TOOLS)/bin/stripe-mock
STRIPE_MOCK_STAMP   := $(TOOLS)/bin/.stripe-mock-$(STRIPE_MOCK_VERSION)

export VITOLA_WGC := $(WGC)
export VITOLA_STRIPE_MOCK := $(STRIPE_MOCK)

SDK_DEPS  := sdk/node_modules/.vitola-installed

.PHONY: run test build generate compose tools check-tools clean sdk widget browser evidence ocr stripe-mock

run: build
	@$(MAKE) --no-print-directory ocr || echo "tesseract could not be installed: fingerprints will carry no OCR text (the platform runs without it)"
	./bin/vitola serve --demo --data $(DATA)

build:
	$(GO) build -o bin/vitola ./cmd/vitola

test: tools sdk browser ocr
	$(GO) vet ./...
	cd sdk && npm run --silent typecheck && npm test --silent
	$(GO) test -count=1 -timeout 15m ./...

# sdk builds the TypeScript SDK into sdk/dist.
sdk: $(SDK_DEPS)
	cd sdk && npm run --silent build

# widget refreshes the committed copy of the SDK's browser bundle that the
# platform serves to the website widget under /examples/ (a test checks it).
widget: sdk
	cp sdk/dist/index.js examples/widget/vitola-sdk.js

$(SDK_DEPS): sdk/package.json sdk/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	@# Not `npm ci`: it refuses a lock file that lacks other platforms' optional
	@# packages (rollup's native builds), which registries that serve only this
	@# platform leave out. `install --no-save` still installs the locked versions,
	@# checked against the lock's hashes, and never rewrites the lock.
	cd sdk && npm install --no-save --no-audit --no-fund --loglevel=error
	touch $(SDK_DEPS)

# browser: the widget's browser test drives Debian's chromium.
browser:
	@command -v chromium >/dev/null || apt-get install -y --no-install-recommends chromium

# ocr: fingerprints read a band's text with tesseract's command-line program
# when it is installed (optional at run time; the tests use it). Pinned to
# Debian 12's versions, which the fingerprint tests were tuned with.
TESSERACT_PKGS = tesseract-ocr=5.3.0-2 libtesseract5=5.3.0-2 tesseract-ocr-eng=1:4.1.0-2
ocr:
	@command -v tesseract >/dev/null || apt-get install -y --no-install-recommends $(TESSERACT_PKGS)

# generate regenerates every subgraph's gqlgen code from schema/*.graphqls and
# recomposes the router config. Tests fail when either is stale.
generate: compose
	cd subgraphs/catalog && $(GO) tool gqlgen generate --config gqlgen.yml
	cd subgraphs/users && $(GO) tool gqlgen generate --config gqlgen.yml
	cd subgraphs/venues && $(GO) tool gqlgen generate --config gqlgen.yml
	cd subgraphs/payments && $(GO) tool gqlgen generate --config gqlgen.yml
	cd subgraphs/matching && $(GO) tool gqlgen generate --config gqlgen.yml

# evidence rebuilds the demo band evidence (rendered demo bands, fingerprinted)
# after the renderer or the fingerprint changes. A test fails while it is stale.
evidence:
	$(GO) run ./subgraphs/matching/evidence/gen

compose: $(WGC)
	cd schema && $(WGC) router compose -i graph.yaml -o router-config.json
	node -e 'const f="schema/router-config.json",fs=require("fs");fs.writeFileSync(f,JSON.stringify(JSON.parse(fs.readFileSync(f)),null,2)+"\n")'

tools: $(WGC) stripe-mock

# stripe-mock, pinned, built from the Go module proxy into $(TOOLS)/bin; a
# stamp names the installed version, so changing the pin reinstalls.
stripe-mock:
	@test -x $(STRIPE_MOCK) -a -f $(STRIPE_MOCK_STAMP) || { \
	  echo "installing stripe-mock $(STRIPE_MOCK_VERSION) into $(TOOLS)/bin"; \
	  mkdir -p $(TOOLS)/bin && rm -f $(TOOLS)/bin/.stripe-mock-* && \
	  GOBIN=$(TOOLS)/bin $(GO) install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION) && \
	  touch $(STRIPE_MOCK_STAMP); }

# wgc (the federation composer) comes from the npm registry, pinned with its lock
# file in tools/wgc.
$(WGC): tools/wgc/package.json tools/wgc/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	mkdir -p $(TOOLS)
	cp tools/wgc/package.json tools/wgc/package-lock.json $(TOOLS)/
	cd $(TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $(WGC)

clean:
	rm -rf bin .cache sdk/node_modules sdk/dist
