# Vitola: `make run` starts the whole platform on the embedded default; `make test`
# runs every test. Both install what they need, at pinned versions.

GO        ?= go
TOOLS     := $(CURDIR)/.cache/tools
WGC       := $(TOOLS)/node_modules/.bin/wgc
DATA      ?= ./data

# stripe-mock serves the Stripe API on loopback for the stripe gateway's tests.
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK         := $(TOOLS)/bin/stripe-mock
# staticcheck, pinned, lints every package but generated code (make lint).
STATICCHECK_VERSION := v0.8.2

# The fuzz smoke step runs each target for FUZZTIME (longer on demand:
# FUZZTIME=10m make fuzz); a crash found is kept in the package's testdata/fuzz.
FUZZTIME     ?= 30s
FUZZ_TARGETS := FuzzStrictJSON:./internal/jsonbody FuzzCursor:./subgraphs/catalog/search FuzzBarcode:./subgraphs/catalog \
                FuzzCheck:./subgraphs/payments/card FuzzFingerprintDecode:./subgraphs/matching FuzzImageSniff:./subgraphs/matching/imagefetch FuzzPreParse:./router/limits

# graphql-http's server audit, pinned with its lock file in tools/graphql-http;
# platform's TestGraphQLOverHTTPAudit runs it against the live server.
GRAPHQL_HTTP_DIR := $(TOOLS)/graphql-http
GRAPHQL_HTTP     := $(GRAPHQL_HTTP_DIR)/node_modules/graphql-http/package.json
# The subscription clients frontend apps use (graphql-ws, graphql-sse), pinned
# with their lock file in tools/graphql-clients; platform's
# TestLiveSessionsNodeClients runs them against the live server.
GRAPHQL_CLIENTS_DIR := $(TOOLS)/graphql-clients
GRAPHQL_CLIENTS     := $(GRAPHQL_CLIENTS_DIR)/node_modules/graphql-ws/package.json

export VITOLA_WGC := $(WGC)
export VITOLA_GRAPHQL_HTTP := $(GRAPHQL_HTTP_DIR)
export VITOLA_GRAPHQL_CLIENTS := $(GRAPHQL_CLIENTS_DIR)
export VITOLA_STRIPE_MOCK := $(STRIPE_MOCK)

SDK_DEPS  := sdk/node_modules/.vitola-installed
# The Relay example's pinned npm packages (relay-compiler, typescript, graphql).
RELAY_DEPS := examples/relay/node_modules/.vitola-installed
# The @defer example's pinned npm packages (Apollo Client, relay-runtime, meros).
DEFER_DEPS := examples/defer/node_modules/.vitola-installed
SDK_PACK  := .cache/sdk-pack

.PHONY: docs install run test bench-router cosmo-router bench-compare build generate compose tools check-tools clean sdk sdk-package relay-example defer-example widget browser evidence ocr stripe-mock staticcheck lint fuzz

run: build
	@$(MAKE) --no-print-directory ocr || echo "tesseract could not be installed: fingerprints will carry no OCR text (the platform runs without it)"
	./bin/vitola serve --demo --data $(DATA)

build:
	$(GO) build -o bin/vitola ./cmd/vitola

# install puts vitola on the PATH as Go installs commands: into GOBIN, else
# GOPATH's bin (the docs say ./bin/vitola, which make run builds, throughout).
install:
	$(GO) install ./cmd/vitola
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	echo "installed $$dir/vitola"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "add $$dir to your PATH to run it as vitola";; esac

# go test runs through tools/gotest: the same output, then one line of what
# was skipped and why (plain go test hides skips); its exit status is go test's.
# -timeout guards against a hang, sized for a busy machine: the longest
# package (platform) takes about 5 minutes on a quiet one.
test: tools sdk sdk-package relay-example defer-example browser ocr lint
	cd sdk && npm run --silent typecheck && npm test --silent
	$(GO) build -o $(TOOLS)/bin/gotest ./tools/gotest
	GO=$(GO) $(TOOLS)/bin/gotest -count=1 -timeout 40m ./...
	# the router's tests again with inbound deduplication and single-flight off
	VITOLA_TEST_DEDUP=off $(GO) test -count=1 ./router/
	@$(MAKE) --no-print-directory fuzz

# bench-router: the router in front of graphql-go-tools' federation test
# subgraphs (tools/fedsubgraphs) and of Vitola's own, against calling a subgraph
# directly, deduplication on and off, medians of rounds as ratios (see
# router/federation_bench_test.go). BENCH_ROUNDS and BENCH_SECONDS tune it.
# COSMO=1 measures Cosmo's router (0.341.0, pinned in tools/cosmo-router.sh;
# COSMO_SRC=a git copy of its repository where the module proxy refuses it) in
# the same rounds and prints the ratios issue 42 sets goals for.
BENCH_ROUNDS ?= 3
BENCH_SECONDS ?= 2
COSMO_ROUTER := $(TOOLS)/bin/cosmo-router
bench-router: $(if $(COSMO),cosmo-router)
	VITOLA_BENCH=1 VITOLA_BENCH_ROUNDS=$(BENCH_ROUNDS) VITOLA_BENCH_SECONDS=$(BENCH_SECONDS) $(if $(COSMO),VITOLA_BENCH_COSMO=$(COSMO_ROUTER)) $(GO) test ./router -run '^TestRouterBenchmark$$' -count=1 -v -timeout 60m

cosmo-router:
	GO=$(GO) tools/cosmo-router.sh $(COSMO_ROUTER)

# bench-compare: vitola built from REF (any commit, e.g. REF=96e9e18) and from
# the working tree, uncommitted changes included; the main benchmarks (router
# join, REST search at 100k, payments pair, identify one photo, import) run
# against each build's server on loopback, the two taking turns each round,
# and print as ratios new/old with their spread (tools/benchcompare; about 10
# minutes on 2 cores). BENCH_ROUNDS, BENCH_SECONDS and BENCH_ONLY (e.g.
# search,payments) given to make reach it through the environment, as make
# passes command-line variables on: its defaults (5 rounds of 5 s) are its
# own, not bench-router's above.
bench-compare:
	@test -n "$(REF)" || { echo "usage: make bench-compare REF=<commit> [BENCH_ROUNDS=5] [BENCH_SECONDS=5] [BENCH_ONLY=join,search,payments,identify,import]"; exit 2; }
	$(GO) run ./tools/benchcompare -ref '$(REF)'

# lint: go vet and the pinned staticcheck find nothing outside generated code
# (files marked "Code generated ... DO NOT EDIT.").
lint: staticcheck
	$(GO) vet ./...
	@gen=$$(grep -rlE '^// Code generated .*DO NOT EDIT\.$$' --include='*.go' --exclude-dir=node_modules . | sed 's|^\./||'); \
	out=$$($(TOOLS)/bin/staticcheck ./... 2>&1 | grep -vF "$$gen"); \
	if [ -n "$$out" ]; then echo "$$out"; echo "staticcheck found the above"; exit 1; fi

# fuzz: the smoke step of the native fuzz targets (tools/fuzz.sh).
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) tools/fuzz.sh $(FUZZ_TARGETS)

# sdk builds the TypeScript SDK into sdk/dist.
sdk: $(SDK_DEPS)
	cd sdk && npm run --silent build

# sdk-package packs the SDK as npm publishes it and checks the tarball with the
# pinned @arethetypeswrong/cli (each entry point's types under node10, node16
# from CommonJS and from ESM, and bundler) and publint; any message of either,
# a publint suggestion too, fails. (platform's TestSDKConsumers installs such a
# tarball into a CommonJS and an ESM project and runs them against the server.)
sdk-package: sdk
	rm -rf $(SDK_PACK) && mkdir -p $(SDK_PACK)
	cd sdk && npm pack --ignore-scripts --silent --pack-destination ../$(SDK_PACK) >/dev/null
	cd sdk && ./node_modules/.bin/attw ../$(SDK_PACK)/*.tgz
	@out=$$(cd sdk && ./node_modules/.bin/publint run --strict ../$(SDK_PACK)/*.tgz); echo "$$out"; \
	case "$$out" in *"All good!"*) ;; *) echo "publint found the above in the packed SDK"; exit 1;; esac

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

# relay-example installs the Relay example's pinned packages; its Go test
# (examples/relay) compiles the app with relay-compiler against the schema the
# running server introspects, then typechecks it with tsc.
relay-example: $(RELAY_DEPS)

$(RELAY_DEPS): examples/relay/package.json examples/relay/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	cd examples/relay && npm install --no-save --no-audit --no-fund --loglevel=error
	touch $(RELAY_DEPS)

# defer-example installs the @defer example's pinned packages; its Go test
# (examples/defer) runs Apollo Client and Relay against the built binary.
defer-example: $(DEFER_DEPS)

$(DEFER_DEPS): examples/defer/package.json examples/defer/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	cd examples/defer && npm install --no-save --no-audit --no-fund --loglevel=error
	touch $(DEFER_DEPS)

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

# docs writes the reference pages generated from the code (docs/reference:
# every command, flag and environment variable); a test fails while one is stale.
docs:
	VITOLA_UPDATE=1 $(GO) test -count=1 -run '^TestReferenceDocs$$' ./cmd/vitola

# evidence rebuilds the demo band evidence (rendered demo bands, fingerprinted)
# after the renderer or the fingerprint changes. A test fails while it is stale.
evidence:
	$(GO) run ./tools/evidencegen

compose: $(WGC)
	cd schema && $(WGC) router compose -i graph.yaml -o router-config.json
	node -e 'const f="schema/router-config.json",fs=require("fs");fs.writeFileSync(f,JSON.stringify(JSON.parse(fs.readFileSync(f)),null,2)+"\n")'

tools: $(WGC) $(GRAPHQL_HTTP) $(GRAPHQL_CLIENTS) stripe-mock

# go-install installs a pinned Go command from the module proxy into
# $(TOOLS)/bin: $(call go-install,NAME,MODULE,VERSION). A stamp names the
# installed version, so changing the pin reinstalls.
define go-install
	@test -x $(TOOLS)/bin/$(1) -a -f $(TOOLS)/bin/.$(1)-$(3) || { \
	  echo "installing $(1) $(3) into $(TOOLS)/bin"; \
	  mkdir -p $(TOOLS)/bin && rm -f $(TOOLS)/bin/.$(1)-* && \
	  GOBIN=$(TOOLS)/bin $(GO) install $(2)@$(3) && \
	  touch $(TOOLS)/bin/.$(1)-$(3); }
endef

stripe-mock:
	$(call go-install,stripe-mock,github.com/stripe/stripe-mock,$(STRIPE_MOCK_VERSION))

staticcheck:
	$(call go-install,staticcheck,honnef.co/go/tools/cmd/staticcheck,$(STATICCHECK_VERSION))

# wgc (the federation composer) comes from the npm registry, pinned with its lock
# file in tools/wgc.
$(WGC): tools/wgc/package.json tools/wgc/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	mkdir -p $(TOOLS)
	cp tools/wgc/package.json tools/wgc/package-lock.json $(TOOLS)/
	cd $(TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $(WGC)

$(GRAPHQL_CLIENTS): tools/graphql-clients/package.json tools/graphql-clients/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	mkdir -p $(GRAPHQL_CLIENTS_DIR)
	cp tools/graphql-clients/package.json tools/graphql-clients/package-lock.json $(GRAPHQL_CLIENTS_DIR)/
	cd $(GRAPHQL_CLIENTS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(GRAPHQL_CLIENTS)

$(GRAPHQL_HTTP): tools/graphql-http/package.json tools/graphql-http/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required: apt-get install -y nodejs npm"; exit 1; }
	mkdir -p $(GRAPHQL_HTTP_DIR)
	cp tools/graphql-http/package.json tools/graphql-http/package-lock.json $(GRAPHQL_HTTP_DIR)/
	cd $(GRAPHQL_HTTP_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(GRAPHQL_HTTP)

clean:
	rm -rf bin .cache sdk/node_modules sdk/dist examples/relay/node_modules examples/defer/node_modules
