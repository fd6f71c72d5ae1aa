package store

import (
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant/sdk"
)

// place points at what a basis and a project both are, stored in the same columns (name,
// path, metadata, configuration, remote_enabled, data_source): a named directory with its
// Vagrantfile, metadata and data source.
type place struct {
	name, path    *string
	metadata      **sdk.Args_MetadataSet
	configuration **vagrant.Vagrantfile
	remoteEnabled *bool
	dataSource    **vagrant.Job_DataSource
	// meta, conf and ds receive the stored forms a read scans (see scan).
	meta, conf, ds []byte
}

func basisPlace(b *vagrant.Basis) *place {
	return &place{name: &b.Name, path: &b.Path, metadata: &b.Metadata, configuration: &b.Configuration,
		remoteEnabled: &b.RemoteEnabled, dataSource: &b.DataSource}
}

func projectPlace(p *vagrant.Project) *place {
	return &place{name: &p.Name, path: &p.Path, metadata: &p.Metadata, configuration: &p.Configuration,
		remoteEnabled: &p.RemoteEnabled, dataSource: &p.DataSource}
}

// columns are the place's stored columns, in table order.
func (p *place) columns() ([]any, error) {
	meta, err := metadataJSON(*p.metadata)
	if err != nil {
		return nil, err
	}
	bl, err := blobs(*p.configuration, *p.dataSource)
	if err != nil {
		return nil, err
	}
	return []any{*p.name, *p.path, meta, bl[0], *p.remoteEnabled, bl[1]}, nil
}

// scan are the destinations of the place's columns in a row; decode once scanned.
func (p *place) scan() []any {
	return []any{p.name, p.path, &p.meta, &p.conf, p.remoteEnabled, &p.ds}
}

// decode sets the fields whose stored forms scan read.
func (p *place) decode() (err error) {
	if *p.metadata, err = metadataSet(p.meta); err != nil {
		return err
	}
	if *p.configuration, err = unblob[vagrant.Vagrantfile](p.conf); err != nil {
		return err
	}
	*p.dataSource, err = unblob[vagrant.Job_DataSource](p.ds)
	return err
}
