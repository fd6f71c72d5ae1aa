package lvmd

import "github.com/plinth-dev/plinth/libs/api/access"

// What each method of this package's services does, as far as roles go (libs/api/access):
// authz, the gateway and auth's ext_authz read it; a method added to the proto without a
// line here fails libs/api/access's TestEveryMethodIsDeclared.
func init() {
	access.Declare("proto.LVService", map[string]access.Kind{
		"CreateLV":         access.Write,
		"RemoveLV":         access.Write,
		"ResizeLV":         access.Write,
		"CreateBackup":     access.Write,
		"CreateLVSnapshot": access.Write,
	})
	access.Declare("proto.VGService", map[string]access.Kind{
		"GetLVList":    access.Read,
		"GetFreeBytes": access.Read,
		"Watch":        access.Read,
	})
}
