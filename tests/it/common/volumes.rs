//! EBS volume attachments as EC2 describes them: moto leaves `deleteOnTermination` out of
//! `DescribeVolumes`' attachments, which AWS always includes (true for the root volume an instance
//! launched with, false for a volume attached with `AttachVolume`). The proxy adds it, by the
//! device moto gives every root volume.

/// The device moto attaches an instance's root volume at.
const ROOT_DEVICE: &str = "/dev/sda1";

/// `DescribeVolumes`' answer with `deleteOnTermination` on every attachment, or `None` for other calls.
pub fn answered(service: &str, action: &str, status: u16, body: &str) -> Option<String> {
    if service != "ec2" || action != "DescribeVolumes" || status != 200 || body.contains("deleteOnTermination") {
        return None;
    }
    let mut out = String::with_capacity(body.len() + 64);
    let mut rest = body;
    while let Some(start) = rest.find("<device>") {
        let Some(end) = rest[start..].find("</device>") else {
            break;
        };
        let end = start + end + "</device>".len();
        let device = &rest[start + "<device>".len()..end - "</device>".len()];
        out.push_str(&rest[..end]);
        out.push_str(&format!(
            "<deleteOnTermination>{}</deleteOnTermination>",
            device == ROOT_DEVICE
        ));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Some(out)
}
