module github.com/siemctl/siemctl

go 1.26.8

require (
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/fatih/color v1.19.0
	github.com/go-viper/mapstructure/v2 v2.4.0
	github.com/godbus/dbus/v5 v5.1.0
	github.com/gofrs/flock v0.13.1
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/google/renameio/v2 v2.0.2
	github.com/knqyf263/go-deb-version v0.0.0-20241115132648-6f4aee6ccd23
	github.com/mattn/go-isatty v0.0.24
	github.com/opensearch-project/opensearch-go/v4 v4.8.1
	github.com/spf13/cobra v1.10.2
	github.com/spf13/viper v1.21.0
	golang.org/x/crypto v0.41.0
	golang.org/x/mod v0.41.0
	golang.org/x/sys v0.47.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.6 // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/pelletier/go-toml/v2 v2.2.4 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/sagikazarmark/locafero v0.11.0 // indirect
	github.com/sourcegraph/conc v0.3.1-0.20240121214520-5f936abd7ae8 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/subosito/gotenv v1.6.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)
